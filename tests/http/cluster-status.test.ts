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

// Sentinel reports are ordered by { leaseEpoch, seq } (issue 33, defect 10): the Lease's
// transitions when the reporting krane took the lead, and that leader's own counter. Every krane
// replica agrees on them; wall clocks of different processes are not compared at all.
const sentinelReport = (image: string, order: Record<string, unknown> = {}, available = 1) =>
  post('/v1/cluster/sentinels/status', east, {
    region: 'us-east-1',
    sentinels: [{ sentinelId: 'snt-east', availableReplicas: available, updatedReplicas: 1, readyReplicas: 1, observedGeneration: 4, runningImage: image, health: 'healthy', ...order }],
  });
const runningImage = async () => (await sentinels.getSentinel(sql, 'snt-east'))!.runningImage;

test('a report krane made earlier that arrives later does not overwrite the newer one (same leader, by seq)', async () => {
  const t = Date.now();
  assert.equal((await sentinelReport('s:new', { leaseEpoch: 1, seq: 5, observedAt: t })).statusCode, 200);
  // Accepted (krane is not to retry it), but older than what the row holds: ignored.
  assert.equal((await sentinelReport('s:old', { leaseEpoch: 1, seq: 4, observedAt: t + 10 })).statusCode, 200);
  assert.equal(await runningImage(), 's:new', 'a later wall clock does not make a report newer');
  assert.equal((await sentinelReport('s:newest', { leaseEpoch: 1, seq: 6, observedAt: t - 10 })).statusCode, 200);
  assert.equal(await runningImage(), 's:newest', 'an earlier wall clock does not make it older');
});

test('after a takeover by a replica whose clock is behind, the new leader\'s reports win and the old one\'s late ones lose', async () => {
  const t = Date.now();
  // The old leader (epoch 2), its clock 30 s ahead.
  assert.equal((await sentinelReport('s:old-leader', { leaseEpoch: 2, seq: 40, observedAt: t + 30_000 }, 1)).statusCode, 200);
  assert.equal(await runningImage(), 's:old-leader');
  // The new leader (epoch 3) starts counting again, its clock behind.
  assert.equal((await sentinelReport('s:new-leader', { leaseEpoch: 3, seq: 1, observedAt: t - 5_000 }, 2)).statusCode, 200);
  const row = (await sentinels.getSentinel(sql, 'snt-east'))!;
  assert.deepEqual([row.runningImage, row.availableReplicas], ['s:new-leader', 2]);
  // A report of the old leader held on a slow link lands now: ignored.
  assert.equal((await sentinelReport('s:old-late', { leaseEpoch: 2, seq: 41, observedAt: t + 31_000 })).statusCode, 200);
  assert.equal(await runningImage(), 's:new-leader');
});

test('a wall-clock observedAt is only shown, and only within a minute of ctrl\'s clock: 1e308 pins nothing', async () => {
  const observedAt = async () => (await sql<{ observedAt: number | null }[]>`SELECT observed_at FROM sentinels WHERE id = 'snt-east'`)[0]!.observedAt;
  assert.equal((await sentinelReport('s:pinned?', { leaseEpoch: 3, seq: 2, observedAt: 1e308 })).statusCode, 200);
  assert.equal(await runningImage(), 's:pinned?');
  assert.equal(await observedAt(), null, 'a time outside now ± 60 s is not kept');
  assert.equal((await sentinelReport('s:after', { leaseEpoch: 3, seq: 3, observedAt: Date.now() - 1 })).statusCode, 200);
  assert.equal(await runningImage(), 's:after', 'the absurd time pinned nothing');
  assert.ok(Math.abs((await observedAt())! - Date.now()) < 60_000, 'a sane time is kept for display');
});

test('an older krane (no leaseEpoch and seq) is applied as it comes; a half order or a bad value is refused naming the field', async () => {
  assert.equal((await sentinelReport('s:unordered')).statusCode, 200);
  assert.equal(await runningImage(), 's:unordered');
  assert.equal((await sentinelReport('s:unordered-with-clock', { observedAt: Date.now() + 3_600_000 })).statusCode, 200);
  assert.equal(await runningImage(), 's:unordered-with-clock', 'its clock orders nothing either');
  // The ordered leader after it still wins over anything older than it.
  assert.equal((await sentinelReport('s:ordered', { leaseEpoch: 3, seq: 9 })).statusCode, 200);
  assert.equal((await sentinelReport('s:stale', { leaseEpoch: 3, seq: 8 })).statusCode, 200);
  assert.equal(await runningImage(), 's:ordered');
  for (const [order, field] of [[{ leaseEpoch: 4 }, 'seq'], [{ seq: 4 }, 'leaseEpoch'], [{ leaseEpoch: -1, seq: 1 }, 'leaseEpoch'], [{ leaseEpoch: 2 ** 31, seq: 1 }, 'leaseEpoch'], [{ leaseEpoch: 1, seq: 2 ** 53 }, 'seq'], [{ observedAt: -1 }, 'observedAt']] as const) {
    const r = await sentinelReport('s:bad', order);
    assert.equal(r.statusCode, 400, JSON.stringify(order));
    assert.ok(JSON.stringify(JSON.parse(r.body).error.details).includes(field), `${JSON.stringify(order)} names ${field}: ${r.body}`);
  }
  assert.equal(await runningImage(), 's:ordered', 'nothing of a refused report was written');
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
