// Scoped keys (issue 26): a key of workspace A cannot read, list, stream or change anything of
// workspace B (404s, filtered lists, no events); a read-only key gets 403 ERR_FORBIDDEN naming the
// permission on every write of the OpenAPI document; fleet-wide rollouts need the admin token;
// revoking a key closes its WebSocket while a bystander's stays open, on every replica; the
// per-key rate limit answers 429 with Retry-After. Nothing else ever closes those sockets or
// ends the waiting call here, so their ending is the revocation's doing: no time bound needed
// (how fast is not a test's question).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import WebSocket from 'ws';
import { deployments, sentinels } from '../../src/store';
import { openApiDocument } from '../../src/http/api';
import { until, within } from '../helpers/wait';
import { realKeyClock } from '../../src/http/keys';
import { testCtrl } from '../http/helpers';
import { loadConfig } from '../../src/config';
import { startCtrl } from '../../src/modes/ctrl';
import { ALL_PERMISSIONS, insertDeploymentOf, makeKey, makeTenant } from './tenancy-helpers';

/** How far the keys' clock is ahead of the wall clock (the expiry test moves it). */
let ahead = 0;
const keyClock = { ...realKeyClock, now: () => Date.now() + ahead };
const t = await testCtrl({ keyRateLimit: 1000 }, { keyClock });
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
await insertDeploymentOf(t, A, 'dep-of-a');
await insertDeploymentOf(t, B, 'dep-of-b');
const adminA = await makeKey(t, { workspaceId: A.workspaceId }, ALL_PERMISSIONS.filter((p) => p !== 'rollouts.write'));
const readA = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read', 'regions.read', 'invocations.read', 'audit.read']);

function openEvents(key: string, base = t.url): Promise<{ ws: WebSocket; got: any[]; closed: () => { code: number } | null }> {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/events`, { headers: { authorization: `Bearer ${key}` } });
  const got: any[] = [];
  let closed: { code: number } | null = null;
  ws.on('message', (d) => got.push(JSON.parse(String(d))));
  ws.on('close', (code) => (closed = { code }));
  after(() => ws.terminate());
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, got, closed: () => closed }));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`status ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
  });
}

test("a key of workspace A gets 404 for B's deployment, environment, workspace and project, and lists leave B out", async () => {
  const key = adminA.key;
  for (const path of ['/v1/deployments/dep-of-b', `/v1/environments/${B.environmentId}`, `/v1/environments/${B.environmentId}/traffic`, `/v1/workspaces/${B.workspaceId}`, `/v1/workspaces/${B.workspaceId}/projects`, `/v1/projects/${B.projectId}/environments`]) {
    const r = await t.api(path, { token: key });
    assert.equal(r.status, 404, `${path}: ${r.text}`);
    assert.equal(r.body.error.code, 'ERR_NOT_FOUND');
    // The answer is the one an id that never existed gets.
    const ghost = await t.api(path.replace(/(dep-of-b|env-b|ws-b|prj-b)/, 'no-such-thing'), { token: key });
    assert.equal(ghost.status, 404, path);
  }
  assert.equal((await t.api('/v1/deployments/dep-of-a', { token: key })).status, 200);
  const ws = await t.api('/v1/workspaces', { token: key });
  assert.deepEqual(ws.body.workspaces.map((w: any) => w.id), [A.workspaceId]);
  const listB = await t.api(`/v1/deployments?environmentId=${B.environmentId}`, { token: key });
  assert.deepEqual(listB.body.deployments, []);
  const listA = await t.api(`/v1/deployments?environmentId=${A.environmentId}`, { token: key });
  assert.deepEqual(listA.body.deployments.map((d: any) => d.id), ['dep-of-a']);
  const keys = await t.api('/v1/keys', { token: key });
  assert.ok(keys.body.keys.length >= 2 && keys.body.keys.every((k: any) => k.scope.workspaceId === A.workspaceId), keys.text);
  assertEvery(keys.body.keys, (k: any) => !('key' in k) && !('keyHash' in k), 'no secret in the list');
});

test("a key of workspace A changes nothing of B: stop, start, rollback, promote, abort, sentinel deploy, delete are 404; a deploy into B's environment is refused", async () => {
  const key = adminA.key;
  await sentinels.ensureSentinel(t.db.sql, { id: 'snt-of-b', workspaceId: B.workspaceId, projectId: B.projectId, appId: (await t.db.sql`SELECT app_id FROM environments WHERE id = ${B.environmentId}`)[0]!.appId as string, environmentId: B.environmentId, region: 'us-east-1', image: 'sentinel:1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
  for (const [method, path] of [
    ['POST', '/v1/deployments/dep-of-b/stop'], ['POST', '/v1/deployments/dep-of-b/start'], ['POST', '/v1/deployments/dep-of-b/rollback'],
    ['POST', '/v1/deployments/dep-of-b/promote'], ['POST', '/v1/deployments/dep-of-b/abort'], ['POST', '/v1/sentinels/snt-of-b/deploy?wait=false'],
    ['DELETE', `/v1/environments/${B.environmentId}`], ['POST', `/v1/projects/${B.projectId}/environments`], ['POST', `/v1/workspaces/${B.workspaceId}/projects`],
  ] as const) {
    const body = method === 'POST' ? (path.endsWith('environments') ? { slug: 'x' } : path.endsWith('projects') ? { name: 'x' } : {}) : undefined;
    const r = await t.api(path, { method, token: key, ...(body ? { body } : {}) });
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
  }
  const deploy = await t.api('/v1/deployments', { token: key, body: { image: 'nginx:1', regions: ['us-east-1'], environmentId: B.environmentId } });
  assert.equal(deploy.status, 400, deploy.text);
  assert.equal(deploy.body.error.details[0].field, 'environmentId');
  const [b] = await t.db.sql`SELECT status, desired_state FROM deployments WHERE id = 'dep-of-b'`;
  assert.equal(b!.desiredState, 'running');
  assert.equal((await t.db.sql`SELECT count(*)::int AS n FROM deployments WHERE environment_id = ${B.environmentId}`)[0]!.n, 1);
  // A's own sentinel is listed, B's is not (ensureSentinel keeps one that exists).
  const appA = (await t.db.sql`SELECT app_id FROM environments WHERE id = ${A.environmentId}`)[0]!.appId as string;
  await sentinels.ensureSentinel(t.db.sql, { id: 'snt-of-a', workspaceId: A.workspaceId, projectId: A.projectId, appId: appA, environmentId: A.environmentId, region: 'us-east-1', image: 'sentinel:1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
  const mine = await t.api(`/v1/sentinels`, { token: key });
  assertEvery(mine.body.sentinels, (s: any) => s.workspaceId === A.workspaceId, mine.text);
  assert.ok(mine.body.sentinels.some((s: any) => s.id === 'snt-of-a'), mine.text);
});

test("a key of workspace A streams A's events and none of B's", async () => {
  const { got } = await openEvents(adminA.key);
  const admin = await openEvents(t.adminToken);
  await until(() => got.some((e) => e.type === 'hello') && admin.got.some((e) => e.type === 'hello'), 10_000, 'hello');
  // B's change first, then A's: events reach a socket in order, so once A's is there B's would be.
  await deployments.setDeploymentStatus(t.db.sql, 'dep-of-b', 'deploying');
  await deployments.setDeploymentStatus(t.db.sql, 'dep-of-a', 'deploying');
  await until(() => got.some((e) => e.deploymentId === 'dep-of-a'), 10_000, "A's event");
  await until(() => admin.got.some((e) => e.deploymentId === 'dep-of-b'), 10_000, "B's event reached the admin");
  assert.equal(got.filter((e) => e.deploymentId === 'dep-of-b').length, 0, JSON.stringify(got));
});

test('a read-only key gets 403 ERR_FORBIDDEN naming the permission on every write of the OpenAPI document', async () => {
  const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
  // The cluster API (/v1/cluster/*) is the agents': it takes agent tokens only, so a key is a 401 there (tested in tests/http).
  const writes = Object.entries(doc.paths)
    .filter(([path]) => !path.startsWith('/v1/cluster/'))
    .flatMap(([path, ops]) => Object.keys(ops).filter((m) => m !== 'get').map((m) => [m.toUpperCase(), path] as const));
  assert.ok(writes.length >= 15, `writes: ${writes.length}`);
  for (const [method, path] of writes) {
    const concrete = path.replace('{id}', 'dep-of-a').replace('{image}', 'x');
    const r = await t.api(concrete, { method, token: readA.key, body: {} });
    assert.equal(r.status, 403, `${method} ${concrete}: ${r.text}`);
    assert.equal(r.body.error.code, 'ERR_FORBIDDEN', `${method} ${concrete}`);
    assert.ok(r.body.error.details[0]?.message, `${method} ${concrete} names what is missing: ${r.text}`);
  }
  const stop = await t.api('/v1/deployments/dep-of-a/stop', { method: 'POST', token: readA.key });
  assert.equal(stop.body.error.details[0].message, 'deployments.write');
  assert.match(stop.body.error.message, /deployments\.write/);
  // Reads still work.
  assert.equal((await t.api('/v1/deployments/dep-of-a', { token: readA.key })).status, 200);
});

test('fleet-wide rollouts need the admin token: a key holding rollouts.write still gets 403', async () => {
  const k = await makeKey(t, { workspaceId: A.workspaceId }, ['rollouts.write']);
  const r = await t.api('/v1/sentinel-rollouts', { token: k.key, body: { image: 'sentinel:2' } });
  assert.equal(r.status, 403, r.text);
  assert.match(r.body.error.message, /unscoped/);
  assert.equal((await t.api('/v1/sentinel-rollouts/current', { token: k.key })).status, 403);
});

test('a key cannot mint a key beyond its own scope or permissions', async () => {
  const narrow = await makeKey(t, { workspaceId: A.workspaceId, projectId: A.projectId }, ['keys.write', 'deployments.read']);
  const wider = await t.api('/v1/keys', { token: narrow.key, body: { name: 'x', scope: { workspaceId: A.workspaceId }, permissions: ['deployments.read'] } });
  assert.equal(wider.status, 400, wider.text);
  const stronger = await t.api('/v1/keys', { token: narrow.key, body: { name: 'x', scope: { workspaceId: A.workspaceId, projectId: A.projectId }, permissions: ['deployments.write'] } });
  assert.equal(stronger.status, 403, stronger.text);
  const other = await t.api('/v1/keys', { token: adminA.key, body: { name: 'x', scope: { workspaceId: B.workspaceId }, permissions: ['deployments.read'] } });
  assert.equal(other.status, 400, other.text);
});

test('revoking a key closes its WebSocket; a bystander key keeps its own; the revoked key then gets 401', async () => {
  const victim = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const bystander = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const v = await openEvents(victim.key);
  const b = await openEvents(bystander.key);
  await until(() => v.got.some((e) => e.type === 'hello') && b.got.some((e) => e.type === 'hello'), 10_000, 'hello');
  assert.equal((await t.api(`/v1/keys/${victim.id}`, { method: 'DELETE', token: adminA.key })).status, 200);
  await until(() => v.closed(), { what: 'the revoked key\'s socket closed' });
  assert.equal(v.closed()!.code, 4401);
  // The bystander's socket still carries events.
  await deployments.setDeploymentStatus(t.db.sql, 'dep-of-a', 'network');
  await until(() => b.got.some((e) => e.deploymentId === 'dep-of-a' && e.status === 'network'), 10_000, 'bystander event');
  assert.equal(b.closed(), null);
  assert.equal((await t.api('/v1/deployments/dep-of-a', { token: victim.key })).status, 401);
  await assert.rejects(openEvents(victim.key), (e: any) => e.status === 401);
});

test('an expired key is refused with 401', async () => {
  // An hour to live, then the keys' clock moves two hours on: no race with a slow request.
  const r = await t.api('/v1/keys', { token: adminA.key, body: { name: 'short', scope: { workspaceId: A.workspaceId }, permissions: ['deployments.read'], expiresAt: new Date(Date.now() + 3_600_000).toISOString() } });
  assert.equal(r.status, 201, r.text);
  assert.equal((await t.api('/v1/deployments/dep-of-a', { token: r.body.key })).status, 200, 'valid until it expires');
  ahead = 2 * 3_600_000;
  try {
    assert.equal((await t.api('/v1/deployments/dep-of-a', { token: r.body.key })).status, 401);
  } finally {
    ahead = 0;
  }
});

test('GET /v1/keys/self says what the caller may do', async () => {
  const self = await t.api('/v1/keys/self', { token: readA.key });
  assert.equal(self.status, 200);
  assert.deepEqual(self.body.permissions.sort(), ['audit.read', 'deployments.read', 'invocations.read', 'regions.read']);
  assert.equal(self.body.scope.workspaceId, A.workspaceId);
  assert.equal((await t.api('/v1/keys/self')).body.type, 'admin');
});

test('revoking a key ends its call still waiting for a workflow (a sentinel deploy)', async () => {
  const appId = (await t.db.sql`SELECT app_id FROM environments WHERE id = ${A.environmentId}`)[0]!.appId as string;
  await sentinels.ensureSentinel(t.db.sql, { id: 'snt-of-a', workspaceId: A.workspaceId, projectId: A.projectId, appId, environmentId: A.environmentId, region: 'us-east-1', image: 'sentinel:1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
  const k = await makeKey(t, { workspaceId: A.workspaceId }, ['sentinels.write']);
  // No krane runs here, so the deploy (a scale: a key may not choose the image) waits for a convergence that never comes.
  const call = fetch(`${t.url}/v1/sentinels/snt-of-a/deploy`, { method: 'POST', headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ replicas: 2 }) }).then(
    (r) => ({ status: r.status }),
    (err: Error) => ({ error: err }),
  );
  await until(async () => (await t.db.sql`SELECT 1 FROM engine_invocations WHERE object_key = 'snt-of-a'`).length > 0, 10_000, 'the deploy is waiting');
  assert.equal((await t.api(`/v1/keys/${k.id}`, { method: 'DELETE' })).status, 200);
  const outcome = await within(call, 'the waiting call ended');
  assert.ok('error' in outcome, `the connection was cut, not answered: ${JSON.stringify(outcome)}`);
});

test('a revocation on one replica closes the key\'s WebSocket on another', async () => {
  const other = await startCtrl(loadConfig('ctrl', { databaseUrl: t.db.url, adminToken: t.adminToken, listen: '127.0.0.1:0', logLevel: 'silent', noMigrate: 'true' }, {}));
  after(() => other.close());
  const k = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const s = await openEvents(k.key, other.url);
  await until(() => s.got.some((e) => e.type === 'hello'), 10_000, 'hello');
  assert.equal((await t.api(`/v1/keys/${k.id}`, { method: 'DELETE' })).status, 200);
  await until(() => s.closed(), { what: 'closed on the other replica' });
});

test("a key lists, reads and cancels only its scope's invocations", async () => {
  // Two workspaces of this test's own, one invocation in each (the other tests count A's and
  // B's deployments and read them as they were made).
  const C = await makeTenant(t, 'inv-c');
  const D = await makeTenant(t, 'inv-d');
  await insertDeploymentOf(t, C, 'dep-inv-a');
  await insertDeploymentOf(t, D, 'dep-inv-b');
  for (const id of ['dep-inv-a', 'dep-inv-b']) assert.equal((await t.api(`/v1/deployments/${id}/stop`, { method: 'POST' })).status, 200);
  const [inv] = await t.db.sql`SELECT id FROM engine_invocations WHERE object_key = 'dep-inv-b' LIMIT 1`;
  const k = await makeKey(t, { workspaceId: C.workspaceId }, ['invocations.read', 'invocations.write']);
  const list = await t.api('/v1/invocations?limit=1000', { token: k.key });
  assert.equal(list.status, 200, list.text);
  assertEvery(list.body.invocations, (i: any) => i.key !== 'dep-inv-b' && i.key !== 'dep-of-b', 'B left out');
  assert.ok(list.body.invocations.some((i: any) => i.key === 'dep-inv-a'), `A's own is listed: ${list.text}`);
  assert.ok((await t.api('/v1/invocations?limit=1000')).body.invocations.some((i: any) => i.key === 'dep-inv-b'), 'the admin sees it');
  assert.equal((await t.api(`/v1/invocations/${inv!.id}`, { token: k.key })).status, 404);
  assert.equal((await t.api(`/v1/invocations/${inv!.id}/cancel`, { method: 'POST', token: k.key })).status, 404);
});
