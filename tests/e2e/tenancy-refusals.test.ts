// Refusals in the audit trail (issue 32): the rate limit is taken before the permission check, so
// a key cannot write refusal rows faster than its rate; every 401, 403 and 429 leaves a row (a
// 429's outcome is `limited`), attributed to the key when the key is known (expired, revoked);
// a known key's refusal rows are budgeted per key like anonymous ones per address, so no key can
// flood the table; an agent's refused calls are audited too, under its token id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testCtrl } from '../http/helpers';
import { until } from '../helpers/wait';

/** Polls slower than the key's rate, so the waits themselves are never limited (a 429 row would spend the key's budget). */
const POLL_MS = 400;
import { RefusalAuditBudget } from '../../src/http/audit';
import { makeKey, makeTenant } from './tenancy-helpers';

const RATE = 5;
const t = await testCtrl({ keyRateLimit: RATE });
const sql = t.db.sql;
const A = await makeTenant(t, 'a');
const rowsOf = async (actorId: string) => sql<{ outcome: string; action: string; actorType: string; workspaceId: string | null }[]>`SELECT outcome, action, actor_type, workspace_id FROM audit_log WHERE actor_id = ${actorId} ORDER BY id`;

test('the rate limit comes before the permission check: a flood of forbidden calls is mostly 429s, and writes a bounded number of rows', async () => {
  const k = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: 60 }, () => t.api('/v1/audit', { token: k.key })));
  const seconds = (Date.now() - started) / 1000;
  const statuses = answers.map((r) => r.status);
  assert.ok(statuses.every((s) => s === 403 || s === 429), statuses.join(','));
  // A 403 costs a token of the bucket first: no more of them than the bucket held (its burst and
  // its refill over the whole flood, however long a slow machine took).
  const forbidden = statuses.filter((s) => s === 403).length;
  assert.ok(forbidden <= RATE * (1 + seconds) + 1, `${forbidden} refusals past the rate in ${seconds} s: ${statuses.join(',')}`);
  assert.ok(statuses.includes(429), statuses.join(','));
  const rows = await rowsOf(k.id);
  // The key's refusal budget (10 a minute; 20 if the calls straddled a minute) bounds its rows.
  assert.ok(rows.length >= 1 && rows.length <= 20, `${rows.length} rows for 40 refused calls`);
  assert.ok(rows.every((r) => r.actorType === 'key' && r.workspaceId === A.workspaceId), JSON.stringify(rows));
});

test("a 429 leaves a row with the outcome 'limited', on a read too", async () => {
  const k = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const answers = await Promise.all(Array.from({ length: 40 }, () => t.api(`/v1/environments/${A.environmentId}`, { token: k.key })));
  assert.ok(answers.some((r) => r.status === 429), answers.map((r) => r.status).join(','));
  const limited = (await rowsOf(k.id)).filter((r) => r.outcome === 'limited');
  assert.ok(limited.length >= 1, 'a limited row');
  assert.equal(limited[0]!.action, 'GET /v1/environments/:id');
});

test('a refused call by a revoked or an expired key is recorded under that key, in its workspace', async () => {
  const revoked = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  assert.equal((await t.api(`/v1/keys/${revoked.id}`, { method: 'DELETE' })).status, 200);
  await until(async () => (await t.api(`/v1/environments/${A.environmentId}`, { token: revoked.key })).status === 401, 5_000, 'the revoked key refused', POLL_MS);
  const r1 = await rowsOf(revoked.id);
  assert.ok(r1.some((r) => r.outcome === 'denied' && r.actorType === 'key' && r.workspaceId === A.workspaceId), JSON.stringify(r1));

  const short = await t.api('/v1/keys', { body: { name: 'short', scope: { workspaceId: A.workspaceId }, permissions: ['deployments.read'], expiresAt: new Date(Date.now() + 1_500).toISOString() } });
  assert.equal(short.status, 201, short.text);
  await until(async () => (await t.api(`/v1/environments/${A.environmentId}`, { token: short.body.key })).status === 401, 10_000, 'the expired key refused', POLL_MS);
  const r2 = await rowsOf(short.body.id);
  assert.ok(r2.some((r) => r.outcome === 'denied' && r.actorType === 'key' && r.workspaceId === A.workspaceId), JSON.stringify(r2));
  assert.equal((await sql`SELECT count(*)::int AS n FROM audit_log WHERE actor_type = 'anonymous' AND request_id IS NOT NULL AND at > now() - interval '20 seconds'`)[0]!.n, 0, 'none of them anonymous');
});

test("an agent's refused calls are audited under its token id: a bad report, a heartbeat for another region", async () => {
  const [tok] = await sql<{ id: string }[]>`SELECT id FROM agent_tokens WHERE region = 'us-east-1' AND revoked_at IS NULL LIMIT 1`;
  const before = (await rowsOf(tok!.id)).length;
  const bad = await t.api('/v1/cluster/deployments/status', { token: t.agentToken, body: { region: 'us-east-1', instances: [{ deploymentId: 'x' }] } });
  assert.equal(bad.status, 400, bad.text);
  const foreign = await t.api('/v1/cluster/heartbeat', { token: t.agentToken, body: { region: 'eu-west-1', agentId: 'a', version: '1', leader: true } });
  assert.equal(foreign.status, 403, foreign.text);
  const rows = (await rowsOf(tok!.id)).slice(before);
  assert.deepEqual(rows.map((r) => `${r.actorType} ${r.outcome}`), ['agent invalid', 'agent denied'], JSON.stringify(rows));
});

test('the refusal budget: per actor and per group, renewed each minute, with what it dropped', () => {
  const b = new RefusalAuditBudget({ perActor: 2, perGroup: 3 });
  const at = 120_000;
  assert.deepEqual([b.take('key:1', 'ws:a', at), b.take('key:1', 'ws:a', at + 1), b.take('key:1', 'ws:a', at + 2)], [true, true, false]);
  assert.deepEqual([b.take('key:2', 'ws:a', at), b.take('key:3', 'ws:a', at)], [true, false], "the workspace's share is spent");
  assert.equal(b.take('key:9', 'ws:b', at), true, 'another workspace has its own');
  assert.deepEqual(b.drain(), { calls: 2, actors: 2 });
  assert.equal(b.drain(), null);
  assert.equal(b.take('key:1', 'ws:a', at + 60_000), true, 'a new minute, a new budget');
});
