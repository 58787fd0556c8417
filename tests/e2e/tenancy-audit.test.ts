// The audit trail (issue 26): each mutating call leaves exactly one row (refused and invalid
// ones too, with the outcome saying which); a change whose audit insert fails is rolled back with
// it (no change without its row), for a handler's own transaction and for a workflow start alike;
// no secret ever reaches a row; GET /v1/audit pages by keyset and a key reads its scope only;
// retention deletes old rows; the operator's agent-token commands are audited too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { loadConfig } from '../../src/config';
import { createTokenCommand, revokeTokenCommand } from '../../src/modes/tokens';
import { cleanupAudit } from '../../src/workflow/audit-cleanup';
import { testCtrl, type TestCtrl } from '../http/helpers';
import { ALL_PERMISSIONS, makeKey, makeTenant } from './tenancy-helpers';

const t = await testCtrl();
const sql = t.db.sql;
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
const count = async (on: TestCtrl = t) => (await on.db.sql`SELECT count(*)::int AS n FROM audit_log`)[0]!.n as number;
const last = async (on: TestCtrl = t) => (await on.db.sql`SELECT * FROM audit_log ORDER BY id DESC LIMIT 1`)[0]!;

/** Runs a call and checks it left exactly one row (in `on`'s database), with this action and outcome. */
async function oneRow(call: () => Promise<{ status: number; text: string }>, action: string, outcome: string, status?: number, on: TestCtrl = t) {
  const before = await count(on);
  const r = await call();
  if (status !== undefined) assert.equal(r.status, status, r.text);
  assert.equal((await count(on)) - before, 1, `${action}: exactly one row (${r.status} ${r.text})`);
  const row = await last(on);
  assert.equal(row.action, action, r.text);
  assert.equal(row.outcome, outcome, `${action}: ${r.text}`);
  return { r, row };
}

test('each mutating call leaves exactly one row, refused and invalid ones too', async () => {
  const writer = await makeKey(t, { workspaceId: A.workspaceId }, ALL_PERMISSIONS.filter((p) => p !== 'rollouts.write'));
  const reader = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const { r: dep, row } = await oneRow(() => t.api('/v1/deployments', { token: writer.key, body: { image: 'nginx:1', regions: ['us-east-1'], environmentId: A.environmentId } }), 'deployment.create', 'ok', 202);
  assert.deepEqual([row.actorType, row.actorId, row.target, row.workspaceId, row.environmentId], ['key', writer.id, (dep as any).body.id, A.workspaceId, A.environmentId]);
  assert.ok(row.requestId && row.sourceIp, 'request id and source address recorded');
  const id = (dep as any).body.id as string;
  await oneRow(() => t.api(`/v1/deployments/${id}/stop`, { method: 'POST', token: writer.key }), 'deployment.stop', 'ok', 200);
  await oneRow(() => t.api(`/v1/deployments/${id}/promote`, { method: 'POST', token: writer.key }), 'deployment.promote', 'failed', 409);
  await oneRow(() => t.api(`/v1/deployments/${id}/stop`, { method: 'POST', token: reader.key }), 'deployment.stop', 'denied', 403);
  const { row: anon } = await oneRow(() => t.api(`/v1/deployments/${id}/start`, { method: 'POST', token: null }), 'deployment.start', 'denied', 401);
  assert.equal(anon.actorType, 'anonymous');
  await oneRow(() => t.api('/v1/deployments', { token: writer.key, body: { image: 'nginx:1', regions: ['us-east-1'], replicas: -1 } }), 'deployment.create', 'invalid', 400);
  await oneRow(() => t.api(`/v1/projects/${A.projectId}/environments`, { token: writer.key, body: { slug: 'audit-env' } }), 'environment.create', 'ok', 201);
  const { r: k } = await oneRow(() => t.api('/v1/keys', { token: writer.key, body: { name: 'ci', scope: { workspaceId: A.workspaceId }, permissions: ['deployments.read'] } }), 'key.create', 'ok', 201);
  await oneRow(() => t.api(`/v1/keys/${(k as any).body.id}`, { method: 'DELETE', token: writer.key }), 'key.revoke', 'ok', 200);
  // The cluster API's refusals too: an unknown agent token, the admin token where an agent's belongs.
  await oneRow(() => t.api('/v1/cluster/heartbeat', { token: 'uka_not-a-token-of-any-region', body: {} }), 'POST /v1/cluster/heartbeat', 'denied', 401);
  await oneRow(() => t.api('/v1/cluster/changes'), 'GET /v1/cluster/changes', 'denied', 403);
  // A refused read leaves a row as well (every 401/403 does); an allowed read leaves none.
  await oneRow(() => t.api(`/v1/audit`, { token: reader.key }), 'GET /v1/audit', 'denied', 403);
  const before = await count();
  assert.equal((await t.api(`/v1/deployments/${id}`, { token: reader.key })).status, 200);
  assert.equal(await count(), before);
});

test('refusals without a known credential write rows within a budget per source; a known key has a budget of its own', async () => {
  // A ctrl of its own: the flood uses up this minute's anonymous budget, which the other
  // tests' anonymous refusals must still find whole, in whatever order they run.
  const own = await testCtrl();
  const C = await makeTenant(own, 'c');
  const before = await count(own);
  for (let i = 0; i < 40; i++) assert.equal((await own.api('/v1/deployments', { token: 'not-a-token', body: {} })).status, 401);
  const written = (await count(own)) - before;
  // At most ten a minute (twenty if the loop crossed into the next minute); a flood writes no more.
  assert.ok(written >= 1 && written <= 20, `${written} rows for 40 anonymous refusals`);
  // The anonymous flood spent no key's budget (tests/e2e/tenancy-refusals.test.ts has a key's).
  const reader = await makeKey(own, { workspaceId: C.workspaceId }, ['deployments.read']);
  await oneRow(() => own.api('/v1/audit', { token: reader.key }), 'GET /v1/audit', 'denied', 403, own);
});

test('a change whose audit row cannot be written does not happen: the handler\'s transaction and the workflow start roll back with it', async () => {
  await sql`CREATE FUNCTION audit_boom() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.outcome = 'ok' AND NEW.target LIKE '%boom%' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$`;
  await sql`CREATE TRIGGER audit_boom BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_boom()`;
  try {
    const { r } = await oneRow(() => t.api(`/v1/projects/${A.projectId}/environments`, { body: { id: 'env-boom', slug: 'boom' } }), 'environment.create', 'failed');
    assert.equal(r.status, 500, r.text);
    assert.equal((await sql`SELECT count(*)::int AS n FROM environments WHERE id = 'env-boom'`)[0]!.n, 0, 'no environment without its row');
    assert.equal((await sql`SELECT count(*)::int AS n FROM audit_log WHERE target = 'env-boom' AND outcome = 'ok'`)[0]!.n, 0);

    // A stop is a workflow start: its audit row is written in the engine's start transaction.
    await sql`INSERT INTO deployments (id, workspace_id, project_id, app_id, environment_id, image, cpu_millicores, memory_mib, replicas, port, regions)
              SELECT 'dep-boom', workspace_id, project_id, app_id, id, 'img:1', 100, 128, 1, 8080, '{us-east-1}' FROM environments WHERE id = ${A.environmentId}`;
    const invocations = async () => (await sql`SELECT count(*)::int AS n FROM engine_invocations WHERE object_key = 'dep-boom'`)[0]!.n;
    await oneRow(() => t.api('/v1/deployments/dep-boom/stop', { method: 'POST' }), 'deployment.stop', 'failed', 500);
    assert.equal(await invocations(), 0, 'no workflow started without its row');
  } finally {
    await sql`DROP TRIGGER audit_boom ON audit_log`;
  }
  assert.equal((await t.api('/v1/deployments/dep-boom/stop', { method: 'POST' })).status, 200);
});

test('no secret reaches the audit trail: env values, keys, tokens, webhook URLs', async () => {
  // Each call carrying a secret wrote its row (so the check below looks where the secret would be).
  await oneRow(() => t.api('/v1/deployments', { body: { image: 'nginx:1', regions: ['us-east-1'], env: { STRIPE_KEY: 'sk_live_marker_4242' } } }), 'deployment.create', 'ok', 202);
  const k = (await oneRow(() => t.api('/v1/keys', { body: { name: 'marker', scope: { workspaceId: A.workspaceId }, permissions: ['deployments.read'] } }), 'key.create', 'ok', 201)).r as { body?: any };
  const key = { id: k.body.id as string, key: k.body.key as string };
  assert.match(key.key, /^uik_/);
  await oneRow(() => t.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:9', slackWebhookUrl: 'https://hooks.slack.com/services/T000/B000/secret-path-marker' } }), 'rollout.start', 'ok');
  await oneRow(() => t.api('/v1/deployments', { token: 'uik_not-a-real-key-but-a-marker-9999', body: {} }), 'deployment.create', 'denied', 401);
  const dump = JSON.stringify(await sql`SELECT * FROM audit_log`);
  for (const secret of ['sk_live_marker_4242', key.key, t.adminToken, 'secret-path-marker', 'marker-9999', t.agentToken]) assert.ok(!dump.includes(secret), `audit holds ${secret.slice(0, 12)}…`);
});

test('GET /v1/audit filters, pages by keyset, and shows a key its scope only', async () => {
  const auditorA = await makeKey(t, { workspaceId: A.workspaceId }, ['audit.read']);
  await t.api(`/v1/projects/${B.projectId}/environments`, { body: { slug: 'b-only' } });
  const all = await t.api('/v1/audit?limit=1000');
  assert.ok(all.body.entries.some((e: any) => e.scope.workspaceId === B.workspaceId));
  const mine = await t.api('/v1/audit?limit=1000', { token: auditorA.key });
  assert.equal(mine.status, 200, mine.text);
  assert.ok(mine.body.entries.length > 0);
  assertEvery(mine.body.entries, (e: any) => e.scope.workspaceId === A.workspaceId, 'only workspace A');
  const e0 = mine.body.entries[0];
  assert.deepEqual(Object.keys(e0).sort(), ['action', 'actor', 'at', 'id', 'outcome', 'requestId', 'scope', 'sourceIp', 'target', 'traceId']);
  // Pages of 2 walk every row once, newest first.
  const seen: string[] = [];
  let cursor: string | null = '';
  while (cursor !== null) {
    const page: any = await t.api(`/v1/audit?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
    seen.push(...page.body.entries.map((e: any) => e.id));
    cursor = page.body.next;
  }
  assert.deepEqual(seen, all.body.entries.map((e: any) => e.id));
  const creates = await t.api('/v1/audit?action=environment.&since=1h');
  assert.ok(creates.body.entries.length > 0 && creates.body.entries.every((e: any) => e.action.startsWith('environment.')));
  // The auditor's refused write is its row (its allowed reads leave none).
  assert.equal((await t.api('/v1/deployments', { token: auditorA.key, body: { image: 'nginx:1', regions: ['us-east-1'] } })).status, 403);
  const byActor = await t.api(`/v1/audit?actor=${auditorA.id}`);
  assert.equal(byActor.body.entries.length, 1, JSON.stringify(byActor.body));
  assert.deepEqual([byActor.body.entries[0].actor.id, byActor.body.entries[0].outcome], [auditorA.id, 'denied']);
  for (const bad of ['since=yesterday', 'since=5', 'cursor=99999999999999999999', 'limit=0']) assert.equal((await t.api(`/v1/audit?${bad}`)).status, 400, bad);
  assert.equal((await t.api(`/v1/audit?since=${new Date(Date.now() - 60_000).toISOString()}`)).status, 200);
});

test('retention deletes rows older than --audit-retention and keeps the rest', async () => {
  await sql`UPDATE audit_log SET at = now() - interval '100 days' WHERE id = (SELECT min(id) FROM audit_log)`;
  const before = await count();
  assert.equal(await cleanupAudit(sql, 90 * 86_400_000), 1);
  assert.equal(await count(), before - 1);
});

test('the operator\'s agent-token commands leave audit rows in their own transaction', async () => {
  const cfg = loadConfig('tokens', { databaseUrl: t.db.url, region: 'eu-west-1' }, {});
  const tok = await createTokenCommand(cfg);
  const [row] = await sql`SELECT * FROM audit_log WHERE action = 'agent-token.create' AND target = ${tok.id}`;
  assert.equal(row!.actorType, 'admin');
  assert.match(row!.actorId, /^cli:/);
  assert.equal(await revokeTokenCommand(loadConfig('dbCommand', { databaseUrl: t.db.url }, {}), tok.id), 'revoked');
  assert.equal((await sql`SELECT count(*)::int AS n FROM audit_log WHERE action = 'agent-token.revoke' AND target = ${tok.id}`)[0]!.n, 1);
  assert.ok(!JSON.stringify(await sql`SELECT * FROM audit_log`).includes(tok.token));
});
