// Ids a tenant chooses, and what answers say about other tenants (issue 32): a user-chosen id
// cannot take another kind's generated prefix (an environment named `dep-<B's deployment>` fed
// B's deployment events to A's socket, whose scope cache was keyed by the bare id); caches are
// keyed by kind and id; an answer about something outside the caller's scope is the same
// whether it exists or not (a key's scope naming B's environment named B's project).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { deployments, events, tenancy } from '../../src/store';
import { until } from '../helpers/wait';
import { testCtrl } from '../http/helpers';
import { ALL_PERMISSIONS, insertDeploymentOf, makeKey, makeTenant } from './tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
const depB = 'dep-bbbbbbbbbbbbbbbb';
const depB2 = 'dep-cccccccccccccccc';
await insertDeploymentOf(t, B, depB);
const keyA = await makeKey(t, { workspaceId: A.workspaceId }, ALL_PERMISSIONS.filter((p) => p !== 'rollouts.write'));

function openEvents(key: string): Promise<{ got: any[] }> {
  const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/events`, { headers: { authorization: `Bearer ${key}` } });
  const got: any[] = [];
  ws.on('message', (d) => got.push(JSON.parse(String(d))));
  after(() => ws.terminate());
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ got }));
    ws.once('error', reject);
  });
}

test("a chosen id with another kind's generated prefix is a 400 naming the field; its own kind's prefix is fine", async () => {
  const before = (await t.db.sql`SELECT (SELECT count(*) FROM workspaces) + (SELECT count(*) FROM projects) + (SELECT count(*) FROM environments) AS n`)[0]!.n;
  const cases: [string, unknown][] = [
    [`/v1/projects/${A.projectId}/environments`, { id: depB, slug: 'x1' }],
    [`/v1/projects/${A.projectId}/environments`, { id: 'snt-abc', slug: 'x2' }],
    [`/v1/projects/${A.projectId}/environments`, { id: 'prj-abc', slug: 'x3' }],
    [`/v1/workspaces/${A.workspaceId}/projects`, { id: 'key-abc', name: 'x' }],
    [`/v1/workspaces/${A.workspaceId}/projects`, { id: 'env-abc', name: 'x' }],
    ['/v1/workspaces', { id: 'inv-abc', name: 'x' }],
    ['/v1/workspaces', { id: 'tok-abc', name: 'x' }],
  ];
  for (const [path, body] of cases) {
    const r = await t.api(path, { body, token: path === '/v1/workspaces' ? undefined : keyA.key });
    assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.error.details[0].field, 'id', r.text);
  }
  assert.equal((await t.db.sql`SELECT (SELECT count(*) FROM workspaces) + (SELECT count(*) FROM projects) + (SELECT count(*) FROM environments) AS n`)[0]!.n, before);
  assert.equal((await t.api(`/v1/projects/${A.projectId}/environments`, { token: keyA.key, body: { id: 'env-mine', slug: 'mine' } })).status, 201);
});

test("the event scope cache is keyed by kind: an environment that shares a deployment's id does not open B's events to A", async () => {
  // Written past the API (which now refuses the id): the cache must hold even for such a row.
  await insertDeploymentOf(t, B, depB2);
  const appId = (await tenancy.projectApp(t.db.sql, A.projectId))!;
  await tenancy.insertEnvironment(t.db.sql, { environmentId: depB2, workspaceId: A.workspaceId, projectId: A.projectId, appId, slug: 'shadow' });
  const s = await openEvents(keyA.key);
  await until(() => s.got.some((e) => e.type === 'hello'), 10_000, 'hello');
  // A's socket sees an event of its environment named like B's deployment, then B's deployment
  // changes, then A's own deployment (events arrive in order: once A's is there, B's would be).
  await events.publishEvent(t.db.sql, { type: 'deployment.traffic', environmentId: depB2, hostname: 'shadow.example.com', backends: [] });
  await until(() => s.got.some((e) => e.type === 'deployment.traffic'), 10_000, "A's environment event");
  await deployments.setDeploymentStatus(t.db.sql, depB2, 'stopped');
  await insertDeploymentOf(t, A, 'dep-aaaaaaaaaaaaaaaa');
  await deployments.setDeploymentStatus(t.db.sql, 'dep-aaaaaaaaaaaaaaaa', 'deploying');
  await until(() => s.got.some((e) => e.deploymentId === 'dep-aaaaaaaaaaaaaaaa'), 10_000, "A's deployment event");
  assert.deepEqual(s.got.filter((e) => e.deploymentId === depB2), [], "B's deployment event reached A's socket");
});

test("a key's scope naming another tenant's environment or project is answered as if it did not exist", async () => {
  const ask = (scope: Record<string, string>) => t.api('/v1/keys', { token: keyA.key, body: { name: 'probe', scope, permissions: ['deployments.read'] } });
  const same = async (real: Record<string, string>, ghost: Record<string, string>, realId: string, ghostId: string) => {
    const r = await ask(real);
    const g = await ask(ghost);
    assert.equal(r.status, g.status, `${r.text} / ${g.text}`);
    assert.equal(r.text.replaceAll(realId, 'X'), g.text.replaceAll(ghostId, 'X'), 'the answers differ only by the id asked about');
    assert.ok(!r.text.includes(B.projectId) || realId === B.projectId, `names B's project: ${r.text}`);
  };
  await same({ workspaceId: A.workspaceId, environmentId: B.environmentId }, { workspaceId: A.workspaceId, environmentId: 'env-ghost' }, B.environmentId, 'env-ghost');
  await same({ workspaceId: A.workspaceId, projectId: B.projectId }, { workspaceId: A.workspaceId, projectId: 'prj-ghost' }, B.projectId, 'prj-ghost');
  await same({ workspaceId: B.workspaceId }, { workspaceId: 'ws-ghost' }, B.workspaceId, 'ws-ghost');
  await same({ workspaceId: B.workspaceId, environmentId: B.environmentId }, { workspaceId: 'ws-ghost', environmentId: 'env-ghost' }, B.workspaceId, 'ws-ghost');
});

test("a taken id is answered the same whoever holds it", async () => {
  const mine = await t.api(`/v1/projects/${A.projectId}/environments`, { token: keyA.key, body: { id: A.environmentId, slug: 'again1' } });
  const theirs = await t.api(`/v1/projects/${A.projectId}/environments`, { token: keyA.key, body: { id: B.environmentId, slug: 'again2' } });
  assert.equal(mine.status, 409, mine.text);
  assert.equal(theirs.status, 409, theirs.text);
  assert.equal(mine.text.replaceAll(A.environmentId, 'X'), theirs.text.replaceAll(B.environmentId, 'X'));
  const pm = await t.api(`/v1/workspaces/${A.workspaceId}/projects`, { token: keyA.key, body: { id: A.projectId, name: 'p' } });
  const pt = await t.api(`/v1/workspaces/${A.workspaceId}/projects`, { token: keyA.key, body: { id: B.projectId, name: 'p' } });
  assert.equal(pm.text.replaceAll(A.projectId, 'X'), pt.text.replaceAll(B.projectId, 'X'));
});
