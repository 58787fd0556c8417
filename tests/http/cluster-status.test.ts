import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { testDb } from '../helpers/db';
import { buildCtrlApp } from '../../src/http';
import { clusterStatusRoutes } from '../../src/http/cluster-status';
import { createLogger } from '../../src/log';
import { agentTokens, applyFailures, cilium, deployments, instances, sentinels, topology } from '../../src/store';

const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };
const { sql } = await testDb();
let app: FastifyInstance;
let east: string;
let west: string;

async function newDeployment(id: string, regions: string[]): Promise<void> {
  await deployments.insertDeployment(sql, {
    id, ...scope, image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions,
  });
  for (const region of regions) await topology.upsertTopology(sql, { deploymentId: id, region, workspaceId: 'default', replicas: 1 });
}

await (async () => {
  east = (await agentTokens.createAgentToken(sql, 'us-east-1')).token;
  west = (await agentTokens.createAgentToken(sql, 'eu-west-1')).token;
  await newDeployment('dep-east', ['us-east-1']);
  await newDeployment('dep-west', ['eu-west-1']);
  await sentinels.ensureSentinel(sql, { id: 'snt-east', ...scope, region: 'us-east-1', image: 's:1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
  await cilium.ensureCiliumPolicy(sql, { id: 'cnp-east', ...scope, region: 'us-east-1' });
  ({ app } = await buildCtrlApp({ sql, logger: createLogger('silent'), routes: [clusterStatusRoutes({ sql })] }));
})();
after(() => app?.close());

const inst = (deploymentId: string, podName: string, over: Record<string, unknown> = {}) => ({
  deploymentId, podName, address: `${podName}.${deploymentId}.unkey.svc.cluster.local`, status: 'running', reason: null, cpuMillicores: 100, memoryMib: 128, ...over,
});
const post = (path: string, token: string | undefined, body: unknown) =>
  app.inject({ method: 'POST', url: path, headers: token ? { authorization: `Bearer ${token}` } : {}, payload: body as object });

test('instances are upserted and deleted for the agent region', async () => {
  let r = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', instances: [inst('dep-east', 'dep-east-0'), inst('dep-east', 'dep-east-1', { status: 'failed', reason: 'CrashLoopBackOff' })] });
  assert.equal(r.statusCode, 200, r.body);
  let rows = await instances.listInstances(sql, 'dep-east');
  assert.deepEqual(rows.map((i) => `${i.podName}:${i.status}:${i.reason}`), ['dep-east-0:running:null', 'dep-east-1:failed:CrashLoopBackOff']);
  r = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', instances: [inst('dep-east', 'dep-east-1', { deleted: true })] });
  assert.equal(r.statusCode, 200);
  rows = await instances.listInstances(sql, 'dep-east');
  assert.deepEqual(rows.map((i) => i.podName), ['dep-east-0']);
});

test('reports about another region are refused with 403 and write nothing', async () => {
  // body region differs from the token's
  let r = await post('/v1/cluster/deployments/status', east, { region: 'eu-west-1', instances: [inst('dep-west', 'dep-west-0')] });
  assert.equal(r.statusCode, 403);
  // body region matches, but the deployment lives elsewhere; nothing of the batch is written
  r = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', instances: [inst('dep-east', 'dep-east-9'), inst('dep-west', 'dep-west-0')] });
  assert.equal(r.statusCode, 403);
  assert.equal(JSON.parse(r.body).error.code, 'ERR_AUTH_FORBIDDEN');
  assert.deepEqual((await instances.listInstances(sql, 'dep-west')).length, 0);
  assert.ok(!(await instances.listInstances(sql, 'dep-east')).some((i) => i.podName === 'dep-east-9'));
  // a west sentinel cannot be written by the east agent, nor an east one by the west agent
  r = await post('/v1/cluster/sentinels/status', west, {
    region: 'eu-west-1',
    sentinels: [{ sentinelId: 'snt-east', availableReplicas: 1, updatedReplicas: 1, readyReplicas: 1, observedGeneration: 1, runningImage: 's:1', health: 'healthy' }],
  });
  assert.equal(r.statusCode, 403);
  assert.equal((await sentinels.getSentinel(sql, 'snt-east'))!.health, 'unknown');
  // apply outcomes naming another region
  r = await post('/v1/cluster/deployments/status', east, {
    region: 'us-east-1',
    applies: [{ resource: { type: 'deployment_topology', id: 'dep-west', region: 'eu-west-1' }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: 'x' }],
  });
  assert.equal(r.statusCode, 403);
  r = await post('/v1/cluster/sentinels/status', west, {
    region: 'eu-west-1',
    applies: [{ resource: { type: 'cilium_network_policy', id: 'cnp-east', region: 'eu-west-1' }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: 'x' }],
  });
  assert.equal(r.statusCode, 403);
});

test('no token 401, bad body 400 naming the field', async () => {
  assert.equal((await post('/v1/cluster/deployments/status', undefined, { region: 'us-east-1' })).statusCode, 401);
  const r = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', instances: [{ ...inst('dep-east', 'p'), status: 'weird' }] });
  assert.equal(r.statusCode, 400);
  assert.ok(JSON.parse(r.body).error.details.some((d: { field: string }) => d.field === 'instances.0.status'));
});

test('sentinel observed fields are written; a sentinel apply failure fails a progressing deploy', async () => {
  let r = await post('/v1/cluster/sentinels/status', east, {
    region: 'us-east-1',
    sentinels: [{ sentinelId: 'snt-east', availableReplicas: 2, updatedReplicas: 2, readyReplicas: 2, observedGeneration: 3, runningImage: 's:1', health: 'healthy' }],
  });
  assert.equal(r.statusCode, 200, r.body);
  const s = (await sentinels.getSentinel(sql, 'snt-east'))!;
  assert.deepEqual([s.availableReplicas, s.updatedReplicas, s.readyReplicas, s.observedGeneration, s.runningImage, s.health], [2, 2, 2, 3, 's:1', 'healthy']);
  await sentinels.setSentinelDeployStatus(sql, 'snt-east', 'progressing');
  r = await post('/v1/cluster/sentinels/status', east, {
    region: 'us-east-1',
    applies: [{ resource: { type: 'sentinel', id: 'snt-east', region: 'us-east-1' }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: 'Deployment.apps is invalid' }],
  });
  assert.equal(r.statusCode, 200, r.body);
  const after = (await sentinels.getSentinel(sql, 'snt-east'))!;
  assert.equal(after.deployStatus, 'failed');
  assert.equal(after.health, 'unhealthy');
});

test('a sentinel report krane made earlier that arrives later does not overwrite the newer one', async () => {
  const report = (image: string, observedAt?: number) =>
    post('/v1/cluster/sentinels/status', east, {
      region: 'us-east-1',
      sentinels: [{ sentinelId: 'snt-east', availableReplicas: 1, updatedReplicas: 1, readyReplicas: 1, observedGeneration: 4, runningImage: image, health: 'healthy', ...(observedAt ? { observedAt } : {}) }],
    });
  const t = Date.now();
  assert.equal((await report('s:new', t + 10)).statusCode, 200);
  // Accepted (krane is not to retry it), but older than what the row holds: ignored.
  assert.equal((await report('s:old', t)).statusCode, 200);
  assert.equal((await sentinels.getSentinel(sql, 'snt-east'))!.runningImage, 's:new');
  assert.equal((await report('s:newest', t + 20)).statusCode, 200);
  assert.equal((await sentinels.getSentinel(sql, 'snt-east'))!.runningImage, 's:newest');
  // A krane from before the stamp: applied as it comes.
  assert.equal((await report('s:unstamped')).statusCode, 200);
  assert.equal((await sentinels.getSentinel(sql, 'snt-east'))!.runningImage, 's:unstamped');
  assert.equal((await report('s:x', -1)).statusCode, 400, 'a stamp must be a positive time');
});

test('a deployment apply failure is stored as data the workflow sees, and outcomes apply in the order listed', async () => {
  await newDeployment('dep-bad', ['us-east-1']);
  const resource = { type: 'deployment_topology', id: 'dep-bad', region: 'us-east-1' };
  const failed = { resource, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: 'StatefulSet.apps "dep-bad" is invalid' };
  let r = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', applies: [failed] });
  assert.equal(r.statusCode, 200, r.body);
  assert.deepEqual((await instances.listInstances(sql, 'dep-bad')).length, 0, 'no fake pod row');
  const [progress] = await deployments.deploymentProgress(sql, 'dep-bad');
  assert.deepEqual(progress!.applyFailure, { code: 'ERR_KUBE_INVALID', reason: 'StatefulSet.apps "dep-bad" is invalid' });
  // cleared, then failed again, then cleared, in one body: the last one wins
  r = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', applies: [{ resource, outcome: 'succeeded' }, failed, { resource, outcome: 'succeeded' }] });
  assert.equal(r.statusCode, 200, r.body);
  assert.equal((await deployments.deploymentProgress(sql, 'dep-bad'))[0]!.applyFailure, null);
  r = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', applies: [{ resource, outcome: 'succeeded' }, failed] });
  assert.equal((await deployments.deploymentProgress(sql, 'dep-bad'))[0]!.applyFailure?.code, 'ERR_KUBE_INVALID');
});

test('the GC brake state is kept per region, newest report wins', async () => {
  const gc = (held: boolean, at: string) => ({ region: 'us-east-1', gc: { held, wouldDelete: 20, managed: 20, maxFraction: 0.5, at } });
  assert.equal((await post('/v1/cluster/region/status', east, gc(true, '2026-01-01T00:00:02Z'))).statusCode, 200);
  assert.equal((await post('/v1/cluster/region/status', east, gc(false, '2026-01-01T00:00:01Z'))).statusCode, 200);
  assert.equal((await applyFailures.getGcStatus(sql, 'us-east-1'))?.held, true, 'an older report does not overwrite');
  assert.equal((await post('/v1/cluster/region/status', east, { ...gc(true, '2026-01-01T00:00:03Z'), region: 'eu-west-1' })).statusCode, 403);
});

test('deleted reports for a deployment that no longer exists are accepted as no-ops', async () => {
  const r = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', instances: [inst('dep-vanished', 'dep-vanished-0', { deleted: true })] });
  assert.equal(r.statusCode, 200, r.body);
  assert.equal(JSON.parse(r.body).accepted.ignored, 1);
  const r2 = await post('/v1/cluster/deployments/status', east, { region: 'us-east-1', instances: [inst('dep-vanished', 'dep-vanished-0')] });
  assert.equal(r2.statusCode, 403);
});
