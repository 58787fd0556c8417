// Caps per workspace beside the per-key ones (issue 32): a keys.write key could mint keys without
// bound, each with its own 20 event sockets and its own request rate. A workspace now holds at
// most so many live keys (409 ERR_TENANCY_LIMIT), so many event sockets on a replica (429), and
// its keys share one request rate (429 naming the workspace). Another workspace is not touched.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { testCtrl } from '../http/helpers';
import { makeKey, makeTenant } from './tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000, workspaceRateLimit: 4 }, { tenantCaps: { keysPerWorkspace: 4 }, events: { socketsPerWorkspace: 2 } });
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');

function open(key: string): Promise<{ status: number }> {
  const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/events`, { headers: { authorization: `Bearer ${key}` } });
  after(() => ws.terminate());
  return new Promise((resolve) => {
    ws.once('open', () => resolve({ status: 101 }));
    ws.once('unexpected-response', (_req, res) => resolve({ status: res.statusCode ?? 0 }));
  });
}

test('a workspace holds at most its cap of live keys; a revocation frees a place; other workspaces are not counted', async () => {
  const keys = [];
  for (let i = 0; i < 4; i++) keys.push(await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read', 'keys.write']));
  const fifth = await t.api('/v1/keys', { token: keys[0]!.key, body: { name: 'one too many', scope: { workspaceId: A.workspaceId }, permissions: ['deployments.read'] } });
  assert.equal(fifth.status, 409, fifth.text);
  assert.equal(fifth.body.error.code, 'ERR_TENANCY_LIMIT');
  assert.equal((await t.db.sql`SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = ${A.workspaceId}`)[0]!.n, 4, 'nothing written');
  await makeKey(t, { workspaceId: B.workspaceId }, ['deployments.read']);
  assert.equal((await t.api(`/v1/keys/${keys[3]!.id}`, { method: 'DELETE' })).status, 200);
  const again = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  // Leave room for the tests below.
  for (const k of [...keys.slice(0, 3), again]) assert.equal((await t.api(`/v1/keys/${k.id}`, { method: 'DELETE' })).status, 200);
});

test('keys made at once cannot pass the cap together', async () => {
  const C = await makeTenant(t, 'c');
  const answers = await Promise.all(Array.from({ length: 10 }, () => t.api('/v1/keys', { body: { name: 'at once', scope: { workspaceId: C.workspaceId }, permissions: ['deployments.read'] } })));
  assert.deepEqual(answers.map((r) => r.status).sort(), [...Array(4).fill(201), ...Array(6).fill(409)], answers.map((r) => r.text).join('\n'));
  assert.equal((await t.db.sql`SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = ${C.workspaceId}`)[0]!.n, 4);
});

test("a workspace's keys share its event sockets: past the cap a 429, while another workspace opens its own", async () => {
  const k1 = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const k2 = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const [a1, a2] = [await open(k1.key), await open(k2.key)];
  assert.deepEqual([a1.status, a2.status], [101, 101]);
  assert.equal((await open(k2.key)).status, 429, "the workspace's second key is past the workspace's cap, not its own");
  const kB = await makeKey(t, { workspaceId: B.workspaceId }, ['deployments.read']);
  assert.equal((await open(kB.key)).status, 101);
});

test("a workspace's keys share one request rate (429 naming the workspace); another workspace keeps its own", async () => {
  const [x, y] = [await makeKey(t, { workspaceId: B.workspaceId }, ['deployments.read']), await makeKey(t, { workspaceId: B.workspaceId }, ['deployments.read'])];
  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => t.api(`/v1/environments/${B.environmentId}`, { token: (i % 2 ? x : y).key })));
  const seconds = (Date.now() - started) / 1000;
  const ok = answers.filter((r) => r.status === 200).length;
  // The two keys together got no more than the workspace's bucket (burst and refill), however long it took.
  assert.ok(ok <= 4 * (1 + seconds) + 1, `${ok} answered in ${seconds} s`);
  const limited = answers.find((r) => r.status === 429);
  assert.ok(limited, answers.map((r) => r.status).join(','));
  assert.match(limited.body.error.message, new RegExp(`workspace ${B.workspaceId}`));
  const kA = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  assert.equal((await t.api(`/v1/environments/${A.environmentId}`, { token: kA.key })).status, 200);
});
