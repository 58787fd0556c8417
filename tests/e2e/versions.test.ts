// Seed 001's versions, rollback by version, quarantine, workspace feature flags and default
// regions (issue 25), end to end on the in-process stack: kube-sim per region, krane, ctrl.
import { startStandInPrometheus } from '../helpers/prometheus-stand-in';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentIn } from '../helpers/stack';
import { deployments, tenancy } from '../../src/store';
import { startDeployWorkflow } from '../../src/workflow';

// The gate's stand-in Prometheus listens on 127.0.0.1 over plain http: allowed explicitly.
const stack = await testStack({ ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
const ONE = ['us-east-1'];

async function create(body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  return stack.api('/v1/deployments', { body: { regions: ONE, replicas: 1, ...body } });
}
async function created(body: Record<string, unknown>): Promise<string> {
  const r = await create(body);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id;
}
const finished = (id: string, ms = 30_000) => deploymentIn(stack, id, ['ready', 'failed', 'rolled_back', 'stopped'], ms);
const rowCount = async () => (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployments`)[0]!.n;

/** An environment of the test's own (versions, history and quarantine are per environment),
 *  so a test counts from v1 and sees only its own deployments, whatever ran before it. */
async function environment(slug: string): Promise<string> {
  const r = await stack.api('/v1/projects/default/environments', { body: { slug, regions: ONE } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id;
}

test('three deploys get v1, v2, v3; a named version is kept, and its repeat is a 409 naming the holder with nothing written', async () => {
  const environmentId = await environment('versions-count');
  const v1 = await created({ image: 'nginx:1.25', environmentId });
  const v2 = await created({ image: 'nginx:1.26', environmentId });
  const v3 = await created({ image: 'nginx:1.27', environmentId });
  const shown = await Promise.all([v1, v2, v3].map(async (id) => (await stack.api(`/v1/deployments/${id}`)).body.version));
  assert.deepEqual(shown, ['v1', 'v2', 'v3']);
  const list = (await stack.api(`/v1/deployments?environmentId=${environmentId}`)).body.deployments.map((d: any) => d.version);
  assert.deepEqual(list.slice(0, 3), ['v3', 'v2', 'v1'], 'lists show the version too');

  const named = await created({ image: 'nginx:1.27', version: 'release-1.0.0+b7', environmentId });
  assert.equal((await stack.api(`/v1/deployments/${named}`)).body.version, 'release-1.0.0+b7');
  const before = await rowCount();
  const again = await create({ image: 'nginx:1.28', version: 'release-1.0.0+b7', environmentId });
  assert.equal(again.status, 409);
  assert.equal(again.body.error.code, 'ERR_DEPLOYMENT_VERSION_TAKEN');
  assert.match(again.body.error.message, new RegExp(named));
  const bad = await create({ image: 'nginx:1.28', version: 'has space', environmentId });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body.error.details.map((d: any) => d.field), ['version']);
  assert.equal(await rowCount(), before, 'a refused create writes no row');
  // The next automatic version skips nothing it need not: v4 (the named one took no number).
  const v4 = await created({ image: 'nginx:1.27', environmentId });
  assert.equal((await stack.api(`/v1/deployments/${v4}`)).body.version, 'v4');
  for (const id of [v1, v2, v3, named, v4]) await finished(id);
});

test('concurrent creates in one environment get distinct versions', async () => {
  const ids = await Promise.all(Array.from({ length: 6 }, () => created({ image: 'nginx:1.27', regions: ONE })));
  const rows = await stack.db.sql<{ version: string }[]>`SELECT version FROM deployments WHERE id = ANY(${ids}::text[])`;
  assert.equal(new Set(rows.map((r) => r.version)).size, 6, JSON.stringify(rows));
  for (const id of ids) await stack.api(`/v1/deployments/${id}/stop`, { method: 'POST' });
});

test('rollback to v1 makes a new ready deployment with v1\'s image and config, named in the history', async () => {
  const environmentId = await environment('versions-rollback');
  const v1 = await created({ image: 'nginx:1.25', port: 9000, env: { MODE: 'one' }, command: ['nginx', '-g', 'daemon off;'], environmentId });
  const v2 = await created({ image: 'nginx:1.26', environmentId });
  for (const id of [v1, v2]) assert.equal((await finished(id)).status, 'ready');
  const rb = await stack.api(`/v1/environments/${environmentId}/rollback`, { body: { version: 'v1' } });
  assert.equal(rb.status, 202, JSON.stringify(rb.body));
  assert.equal(rb.body.rollbackOf, v1);
  const copy = await finished(rb.body.id);
  assert.equal(copy.status, 'ready', copy.error);
  assert.equal(copy.rollbackOf, v1);
  assert.equal(copy.version, rb.body.version);
  assert.notEqual(copy.version, 'v1');
  const orig = (await stack.api(`/v1/deployments/${v1}`)).body;
  for (const k of ['image', 'regions', 'replicas', 'port', 'envKeys', 'command', 'cpuMillicores', 'memoryMib']) assert.deepEqual(copy[k], orig[k], `rollback keeps ${k}`);
  assert.equal(copy.image, 'nginx:1.25');
  const [row] = await stack.db.sql<{ env: Record<string, string> }[]>`SELECT env FROM deployments WHERE id = ${copy.id}`;
  assert.deepEqual(row!.env, { MODE: 'one' });

  const history = (await stack.api(`/v1/environments/${environmentId}/versions`)).body.versions;
  const first = history.find((h: any) => h.version === 'v1');
  assert.equal(first.deploymentId, v1);
  assert.equal(first.image, 'nginx:1.25');
  assert.deepEqual(first.rolledBackBy.map((r: any) => r.deploymentId), [copy.id]);
  assert.deepEqual(history.find((h: any) => h.deploymentId === copy.id).rollbackOf, { deploymentId: v1, version: 'v1' });

  const unknown = await stack.api(`/v1/environments/${environmentId}/rollback`, { body: { version: 'v999' } });
  assert.equal(unknown.status, 404);
  assert.equal((await stack.api('/v1/environments/nope/versions')).status, 404);
  const both = await stack.api(`/v1/environments/${environmentId}/rollback`, { body: { version: 'v1', deploymentId: v1 } });
  assert.equal(both.status, 400);
});

test('a canary rolled back by its analysis quarantines its image: deploy and rollback of it are 409 until forced or released; an abort quarantines nothing', async () => {
  const bad = 'registry.local/app:gate-fails';
  // The gate fails (a value under its minimum), which says the image is bad; a Prometheus that
  // cannot be reached (inconclusive) fails the canary closed but says nothing of the image.
  const prom = await startStandInPrometheus(0);
  after(() => prom.close());
  // A canary walks only against a stable: this environment's first deployment.
  const environmentId = await environment('versions-quarantine');
  assert.equal((await finished(await created({ image: 'nginx:1.27', environmentId }))).status, 'ready');
  const id = await created({
    image: bad,
    environmentId,
    strategy: { type: 'canary', steps: [{ weight: 20, pause: '2s' }], analysis: { interval: '200ms', failureLimit: 1, prometheus: { url: prom.url, query: 'up', min: 1 } } },
  });
  const done = await finished(id);
  assert.equal(done.status, 'rolled_back', JSON.stringify(done.error));
  const q = (await stack.api(`/v1/environments/${environmentId}/quarantine`)).body.images;
  assert.deepEqual(q.map((x: any) => [x.image, x.deploymentId]), [[bad, id]]);
  assert.equal((await stack.api(`/v1/deployments/${id}`)).body.quarantined.deploymentId, id, 'the detail view says the image is quarantined');

  // Nor can it be started again: a start does not walk, so it would come back ready unjudged.
  const start = await stack.api(`/v1/deployments/${id}/start`, { method: 'POST' });
  assert.equal(start.status, 409, JSON.stringify(start.body));
  assert.match(start.body.error.message, /quarantined/);
  assert.equal((await stack.api(`/v1/deployments/${id}`)).body.desiredState, 'stopped');

  const before = await rowCount();
  const refused = await create({ image: bad, environmentId });
  assert.equal(refused.status, 409);
  assert.equal(refused.body.error.code, 'ERR_IMAGE_QUARANTINED');
  assert.match(refused.body.error.message, new RegExp(id));
  assert.match(refused.body.error.message, new RegExp(q[0].reason.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  const rb = await stack.api(`/v1/environments/${environmentId}/rollback`, { body: { deploymentId: id } });
  assert.equal(rb.status, 409);
  assert.equal(rb.body.error.code, 'ERR_IMAGE_QUARANTINED');
  assert.equal(await rowCount(), before);

  const forced = await create({ image: bad, force: true, environmentId });
  assert.equal(forced.status, 202, JSON.stringify(forced.body));
  await finished(forced.body.id);

  const del = await stack.api(`/v1/environments/${environmentId}/quarantine/${encodeURIComponent(bad)}`, { method: 'DELETE' });
  assert.equal(del.status, 200, JSON.stringify(del.body));
  assert.deepEqual((await stack.api(`/v1/environments/${environmentId}/quarantine`)).body.images, []);
  assert.equal((await stack.api(`/v1/environments/${environmentId}/quarantine/${encodeURIComponent(bad)}`, { method: 'DELETE' })).status, 404);
  const released = await create({ image: bad, environmentId });
  assert.equal(released.status, 202);
  await finished(released.body.id);

  // An operator's abort says nothing about the image.
  const aborted = await created({ image: 'registry.local/app:aborted', environmentId, strategy: { type: 'canary', steps: [{ weight: 20, pause: '60s' }] } });
  await until(async () => (await stack.api(`/v1/deployments/${aborted}`)).body.status === 'deploying' || undefined, 20_000, 'canary walking');
  await until(async () => (await stack.api(`/v1/deployments/${aborted}/abort`, { method: 'POST' })).status === 202 || undefined, 20_000, 'abort accepted');
  assert.equal((await finished(aborted)).status, 'rolled_back');
  assert.deepEqual((await stack.api(`/v1/environments/${environmentId}/quarantine`)).body.images, []);
});

test('a digest-pinned image is quarantined by digest, whatever the name in front of it', async () => {
  const digest = 'sha256:' + 'ab'.repeat(32);
  const id = await created({ image: `registry.local/app:crash-x@${digest}` });
  assert.equal((await finished(id)).status, 'failed');
  const q = (await stack.api('/v1/environments/default/quarantine')).body.images;
  assert.deepEqual(q.map((x: any) => x.image), [digest]);
  const other = await create({ image: `mirror.local/app@${digest}` });
  assert.equal(other.status, 409);
  assert.equal((await stack.api(`/v1/environments/default/quarantine/${encodeURIComponent(digest)}`, { method: 'DELETE' })).status, 200);
});

test('a workspace with canary off gets 403 naming the flag and no row; the workflow reads the flags again', async () => {
  const scope = { workspaceId: 'ws-flags', projectId: 'prj-flags', appId: 'app-flags', environmentId: 'env-flags' };
  await tenancy.insertWorkspace(stack.db.sql, { id: scope.workspaceId, name: 'flags' });
  await tenancy.insertProject(stack.db.sql, { id: scope.projectId, workspaceId: scope.workspaceId, name: 'flags' });
  await tenancy.insertApp(stack.db.sql, { id: scope.appId, workspaceId: scope.workspaceId, projectId: scope.projectId, name: 'flags' });
  await tenancy.insertEnvironment(stack.db.sql, { ...scope, slug: 'flags' });

  const all = await stack.api('/v1/workspaces/ws-flags/features');
  assert.deepEqual(all.body.features, { multiRegion: true, autoScaling: true, blueGreen: true, canary: true });
  const put = await stack.api('/v1/workspaces/ws-flags/features', { method: 'PUT', body: { canary: false } });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.deepEqual(put.body.features, { multiRegion: true, autoScaling: true, blueGreen: true, canary: false });
  assert.equal((await stack.api('/v1/workspaces/ws-flags/features', { method: 'PUT', body: { canary: 'no' } })).status, 400);
  assert.equal((await stack.api('/v1/workspaces/nope/features')).status, 404);

  const before = await rowCount();
  const r = await create({ image: 'nginx:1.27', environmentId: 'env-flags', strategy: { type: 'canary', steps: [{ weight: 10, pause: '1s' }] } });
  assert.equal(r.status, 403, JSON.stringify(r.body));
  assert.equal(r.body.error.code, 'ERR_FEATURE_DISABLED');
  assert.match(r.body.error.message, /canary/);
  assert.equal(await rowCount(), before);
  // Rolling is still allowed.
  const ok = await created({ image: 'nginx:1.27', environmentId: 'env-flags' });
  assert.equal((await finished(ok)).status, 'ready');

  // A deployment that got past the API (written before the flag went off) is stopped by the
  // workflow's own journaled read of the flags.
  await stack.api('/v1/workspaces/ws-flags/features', { method: 'PUT', body: { multiRegion: false } });
  const row = await deployments.insertDeployment(stack.db.sql, {
    id: 'dep-flags-late', ...scope, image: 'nginx:1.27', buildContext: null, cpuMillicores: 100, memoryMib: 64, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1', 'eu-west-1'],
  });
  await startDeployWorkflow(stack.ctrl.workflows.commands, row.id);
  const late = await finished(row.id);
  assert.equal(late.status, 'failed');
  assert.match(late.error, /multiRegion/);
});

test('a deploy naming no regions goes to its environment\'s regions, else to ctrl\'s default regions', async () => {
  const d = await created({ image: 'nginx:1.27', regions: undefined });
  assert.deepEqual((await stack.api(`/v1/deployments/${d}`)).body.regions, ['us-east-1', 'eu-west-1']);
  await stack.db.sql`UPDATE environments SET regions = ${['eu-west-1']} WHERE id = 'default'`;
  const e = await created({ image: 'nginx:1.27', regions: undefined });
  assert.deepEqual((await stack.api(`/v1/deployments/${e}`)).body.regions, ['eu-west-1']);
  await stack.db.sql`UPDATE environments SET regions = '{}' WHERE id = 'default'`;
  for (const id of [d, e]) assert.equal((await finished(id)).status, 'ready');
});
