import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/wait';
import { assertEvery } from '../helpers/assert';
import { testDb } from '../helpers/db';
import { newId } from '../../src/ids';
import { changes, cilium, deployments, domains, events, instances, sentinels, tenancy, topology, agentTokens, system } from '../../src/store';

const db = await testDb();
const sql = db.sql;
const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };

/** Asserts a Postgres error with the given SQLSTATE (23514 check, 23503 foreign key, 23505 unique). */
async function rejectsWith(p: Promise<unknown>, code: string, constraintLike?: RegExp) {
  await assert.rejects(p, (err: { code?: string; constraint_name?: string; message: string }) => {
    assert.equal(err.code, code, err.message);
    if (constraintLike) assert.match(err.constraint_name ?? err.message, constraintLike);
    return true;
  });
}

function newDeployment(over: Partial<deployments.NewDeployment> = {}): deployments.NewDeployment {
  return {
    id: newId('dep'),
    ...scope,
    image: 'nginx:1.27',
    buildContext: null,
    cpuMillicores: 250,
    memoryMib: 256,
    replicas: 2,
    port: 8080,
    command: ['nginx', '-g', 'daemon off;'],
    env: { A: '1', B: 'two' },
    regions: ['us-east-1', 'eu-west-1'],
    ...over,
  };
}

test('migrations seed the default scope', async () => {
  const env = await tenancy.getEnvironment(sql, 'default');
  assert.deepEqual(
    env && { ws: env.workspaceId, prj: env.projectId, app: env.appId, slug: env.slug },
    { ws: 'default', prj: 'default', app: 'default', slug: 'default' },
  );
});

test('tenancy: insert and read back; dangling parents rejected', async () => {
  const ws = newId('ws');
  const prj = newId('prj');
  const app = newId('app');
  const env = newId('env');
  await tenancy.insertWorkspace(sql, { id: ws, name: 'acme' });
  await tenancy.insertProject(sql, { id: prj, workspaceId: ws, name: 'web' });
  await tenancy.insertApp(sql, { id: app, workspaceId: ws, projectId: prj, name: 'api' });
  await tenancy.insertEnvironment(sql, { environmentId: env, workspaceId: ws, projectId: prj, appId: app, slug: 'production' });
  const got = await tenancy.getEnvironment(sql, env);
  assert.equal(got?.slug, 'production');
  assert.equal(got?.appId, app);
  await rejectsWith(tenancy.insertProject(sql, { id: newId('prj'), workspaceId: 'nope', name: 'x' }), '23503');
  await rejectsWith(
    tenancy.insertEnvironment(sql, { environmentId: newId('env'), workspaceId: ws, projectId: prj, appId: app, slug: 'production' }),
    '23505',
  );
});

test('deployments: round trip keeps command, env and regions; status and desired state update', async () => {
  const d = newDeployment();
  const inserted = await deployments.insertDeployment(sql, d);
  assert.equal(inserted.status, 'pending');
  assert.equal(inserted.desiredState, 'running');
  const got = await deployments.getDeployment(sql, d.id);
  assert.deepEqual(got?.command, d.command);
  assert.deepEqual(got?.env, d.env);
  assert.deepEqual(got?.regions, d.regions);
  assert.equal(got?.cpuMillicores, 250);
  const failed = await deployments.setDeploymentStatus(sql, d.id, 'failed', 'CrashLoopBackOff');
  assert.equal(failed?.status, 'failed');
  assert.equal(failed?.error, 'CrashLoopBackOff');
  assert.equal((await deployments.setDeploymentDesiredState(sql, d.id, 'stopped'))?.desiredState, 'stopped');
  const list = await deployments.listDeployments(sql, 'default');
  assert.ok(list.some((x) => x.id === d.id));
});

test('deployments: constraints reject invalid values and dangling references', async () => {
  await rejectsWith(deployments.insertDeployment(sql, newDeployment({ port: 70000 })), '23514', /port/);
  await rejectsWith(deployments.insertDeployment(sql, newDeployment({ replicas: -1 })), '23514', /replicas/);
  await rejectsWith(deployments.insertDeployment(sql, newDeployment({ regions: [] })), '23514', /regions/);
  await rejectsWith(deployments.insertDeployment(sql, newDeployment({ image: null, buildContext: null })), '23514');
  await rejectsWith(deployments.insertDeployment(sql, newDeployment({ environmentId: 'missing' })), '23503');
  const d = newDeployment();
  await deployments.insertDeployment(sql, d);
  await rejectsWith(deployments.setDeploymentStatus(sql, d.id, 'exploded' as deployments.DeploymentStatus), '23514', /status/);
});

test('topology: each write records exactly one outbox row in the same transaction', async () => {
  const d = newDeployment();
  await deployments.insertDeployment(sql, d);
  await topology.upsertTopology(sql, { deploymentId: d.id, region: 'us-east-1', workspaceId: 'default', replicas: 2 });
  await topology.upsertTopology(sql, { deploymentId: d.id, region: 'eu-west-1', workspaceId: 'default', replicas: 2 });
  let rows = await changes.listChangesFor(sql, 'deployment_topology', d.id);
  assert.deepEqual(rows.map((r) => r.region).sort(), ['eu-west-1', 'us-east-1']);
  const stopped = await topology.setTopologyStatus(sql, d.id, 'stopped');
  assert.equal(stopped.length, 2);
  rows = await changes.listChangesFor(sql, 'deployment_topology', d.id);
  assert.equal(rows.length, 4);
  assertEvery(rows, (r) => /^\d+$/.test(r.txid), 'txid is exposed as an exact decimal string');
  const t = await topology.getTopology(sql, d.id, 'us-east-1');
  assert.equal(t?.desiredStatus, 'stopped');
  assert.equal((await topology.listTopology(sql, d.id)).length, 2);

  // A rolled-back transaction leaves neither state nor outbox row.
  await assert.rejects(
    sql.begin(async (tx) => {
      await topology.upsertTopology(tx, { deploymentId: d.id, region: 'ap-south-1', workspaceId: 'default', replicas: 1 });
      throw new Error('abort');
    }),
    /abort/,
  );
  assert.equal(await topology.getTopology(sql, d.id, 'ap-south-1'), undefined);
  assert.equal((await changes.listChangesFor(sql, 'deployment_topology', d.id)).length, 4);

  await rejectsWith(
    topology.upsertTopology(sql, { deploymentId: d.id, region: 'Bad_Region', workspaceId: 'default', replicas: 1 }),
    '23514',
  );
  await rejectsWith(topology.upsertTopology(sql, { deploymentId: 'missing', region: 'us-east-1', workspaceId: 'default', replicas: 1 }), '23503');
});

test('sentinels: ensure is idempotent per environment and region; desired and observed fields round trip', async () => {
  const base = { ...scope, region: 'us-east-1', image: 'sentinel:1', replicas: 2, cpuMillicores: 500, memoryMib: 512 };
  const a = await sentinels.ensureSentinel(sql, { id: newId('snt'), ...base });
  const b = await sentinels.ensureSentinel(sql, { id: newId('snt'), ...base });
  assert.equal(a.created, true);
  assert.equal(b.created, false);
  assert.equal(b.sentinel.id, a.sentinel.id);
  assert.equal((await changes.listChangesFor(sql, 'sentinel', a.sentinel.id)).length, 1, 'a no-op ensure records no change');

  const updated = await sentinels.updateSentinelDesired(
    sql,
    a.sentinel.id,
    { image: 'sentinel:2', replicas: 3, cpuMillicores: 500, memoryMib: 512, desiredState: 'running' },
    'progressing',
  );
  assert.equal(updated?.image, 'sentinel:2');
  assert.equal(updated?.deployStatus, 'progressing');
  assert.equal((await changes.listChangesFor(sql, 'sentinel', a.sentinel.id)).length, 2);

  const obs = { availableReplicas: 3, updatedReplicas: 3, readyReplicas: 3, observedGeneration: 7, runningImage: 'sentinel:2', health: 'healthy' as const, observedSpecHash: null };
  assert.equal(await sentinels.updateSentinelObserved(sql, a.sentinel.id, 'eu-west-1', obs), undefined, 'another region cannot write it');
  const observed = await sentinels.updateSentinelObserved(sql, a.sentinel.id, 'us-east-1', obs);
  assert.equal(observed?.observedGeneration, 7);
  assert.equal(observed?.health, 'healthy');
  assert.equal((await changes.listChangesFor(sql, 'sentinel', a.sentinel.id)).length, 2, 'observed fields do not feed krane');
  // Reports carry their order, { leaseEpoch, seq } (sql/0027): one made earlier that reaches ctrl
  // later (held on a slow link, retried after a lost answer, from a leader that lost its Lease)
  // must not overwrite the newer one (chaos seed 48, issue 33). Wall clocks order nothing.
  const newer = { ...obs, observedGeneration: 9, runningImage: 'sentinel:3', order: { epoch: 1, seq: 2 }, observedAt: 1_000 };
  assert.equal((await sentinels.updateSentinelObserved(sql, a.sentinel.id, 'us-east-1', newer))?.observedGeneration, 9);
  assert.equal(await sentinels.updateSentinelObserved(sql, a.sentinel.id, 'us-east-1', { ...obs, observedGeneration: 8, runningImage: 'sentinel:old', order: { epoch: 1, seq: 1 }, observedAt: 2_000 }), undefined);
  const kept = await sentinels.getSentinel(sql, a.sentinel.id);
  assert.equal(kept?.runningImage, 'sentinel:3', 'an older report does not overwrite a newer one');
  assert.equal((await sentinels.updateSentinelObserved(sql, a.sentinel.id, 'us-east-1', { ...obs, observedGeneration: 10, order: { epoch: 2, seq: 0 } }))?.observedGeneration, 10, 'a new leader starts its count again');
  assert.equal((await sentinels.updateSentinelObserved(sql, a.sentinel.id, 'us-east-1', { ...obs, observedGeneration: 11, order: { epoch: 2, seq: 0 } }))?.observedGeneration, 11, 'the same order again is a retry');

  const listed = await sentinels.listSentinels(sql, { region: 'us-east-1' });
  assert.ok(listed.some((s) => s.id === a.sentinel.id));
  await rejectsWith(sentinels.setSentinelDeployStatus(sql, a.sentinel.id, 'done' as sentinels.SentinelDeployStatus), '23514');
  await rejectsWith(sentinels.ensureSentinel(sql, { id: newId('snt'), ...base, region: 'eu-west-1', replicas: -1 }), '23514');
});

test('cilium policies: ensure once per environment and region, state changes recorded', async () => {
  const p = await cilium.ensureCiliumPolicy(sql, { id: newId('cnp'), ...scope, region: 'eu-west-1' });
  const again = await cilium.ensureCiliumPolicy(sql, { id: newId('cnp'), ...scope, region: 'eu-west-1' });
  assert.equal(again.policy.id, p.policy.id);
  assert.equal(again.created, false);
  await cilium.setCiliumPolicyState(sql, p.policy.id, 'stopped');
  assert.equal((await cilium.getCiliumPolicy(sql, p.policy.id))?.desiredState, 'stopped');
  assert.equal((await changes.listChangesFor(sql, 'cilium_network_policy', p.policy.id)).length, 2);
  await rejectsWith(cilium.ensureCiliumPolicy(sql, { id: newId('cnp'), ...scope, environmentId: 'missing', region: 'eu-west-1' }), '23503');
});

test('instances: upsert converges to the latest report; constraints hold', async () => {
  const d = newDeployment();
  await deployments.insertDeployment(sql, d);
  const base = { deploymentId: d.id, region: 'us-east-1', podName: `${d.id}-0`, address: null, cpuMillicores: 250, memoryMib: 256 };
  await instances.upsertInstance(sql, { ...base, status: 'pending', reason: null });
  await instances.upsertInstance(sql, { ...base, status: 'failed', reason: 'CrashLoopBackOff', address: '10.0.0.1' });
  const rows = await instances.listInstances(sql, d.id);
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.status, 'failed');
  assert.equal(rows[0]!.reason, 'CrashLoopBackOff');
  await rejectsWith(instances.upsertInstance(sql, { ...base, status: 'exploded' as instances.InstanceStatus, reason: null }), '23514');
  await rejectsWith(instances.upsertInstance(sql, { ...base, deploymentId: 'missing', status: 'pending', reason: null }), '23503');
  await instances.deleteInstance(sql, d.id, 'us-east-1', `${d.id}-0`);
  assert.equal((await instances.listInstances(sql, d.id)).length, 0);
});

test('progress of a running region counts only instances reported since its topology last changed: a row from before a stop and start is not evidence', async () => {
  const d = newDeployment({ regions: ['us-east-1'], replicas: 1 });
  await deployments.insertDeployment(sql, d);
  await topology.upsertTopology(sql, { deploymentId: d.id, region: 'us-east-1', workspaceId: 'default', replicas: 1 });
  const pod = { deploymentId: d.id, region: 'us-east-1', podName: `${d.id}-0`, address: null, cpuMillicores: 250, memoryMib: 256, reason: null };
  await instances.upsertInstance(sql, { ...pod, status: 'running' });
  const counts = async () => (await deployments.deploymentProgress(sql, d.id)).map((r) => `${r.running} running, ${r.failed.length} failed`);
  assert.deepEqual(await counts(), ['1 running, 0 failed']);
  // Stopped: what is still reported is what an operator must see (a stop krane could not carry out).
  await topology.setTopologyStatus(sql, d.id, 'stopped');
  assert.deepEqual(await counts(), ['1 running, 0 failed'], 'a stopped region counts every row');
  // Started again: the pod seen before may be the one krane is deleting.
  await topology.setTopologyStatus(sql, d.id, 'running');
  assert.deepEqual(await counts(), ['0 running, 0 failed'], 'the old report does not count');
  await instances.upsertInstance(sql, { ...pod, status: 'failed', reason: 'CrashLoopBackOff' });
  assert.deepEqual(await counts(), ['0 running, 1 failed'], 'a report after the change counts, whatever it says');
  await instances.upsertInstance(sql, { ...pod, status: 'running' });
  assert.deepEqual(await counts(), ['1 running, 0 failed']);
  // An operator's stop and start (generation 2): a report arriving after the start counts only
  // when krane made it under the start's generation. One made before krane applied the start
  // (a relist, a report buffered across a krane restart) describes a pod that may be going.
  await deployments.commandDesiredState(sql, d.id, 'stopped');
  await deployments.commandDesiredState(sql, d.id, 'running');
  await topology.setTopologyStatus(sql, d.id, 'running');
  await instances.upsertInstance(sql, { ...pod, status: 'running' });
  assert.deepEqual(await counts(), ['0 running, 0 failed'], 'a report without the generation does not count');
  await instances.upsertInstances(sql, [{ ...pod, status: 'running', generation: 1 }]);
  assert.deepEqual(await counts(), ['0 running, 0 failed'], 'nor one made under the stop');
  await instances.upsertInstances(sql, [{ ...pod, status: 'running', generation: 2 }]);
  assert.deepEqual(await counts(), ['1 running, 0 failed'], 'one made under the start counts');
});

test('domains: assign, move environment domains, pinned domains stay', async () => {
  const d1 = newDeployment();
  const d2 = newDeployment();
  await deployments.insertDeployment(sql, d1);
  await deployments.insertDeployment(sql, d2);
  await domains.assignDomain(sql, { hostname: 'app.example.com', workspaceId: 'default', environmentId: 'default', deploymentId: d1.id, kind: 'environment' });
  await domains.assignDomain(sql, { hostname: `${d1.id}.example.com`, workspaceId: 'default', environmentId: 'default', deploymentId: d1.id, kind: 'deployment' });
  assert.equal(await domains.pointEnvironmentDomains(sql, 'default', d2.id), 1);
  const ofD1 = await domains.listDomains(sql, { deploymentId: d1.id });
  assert.deepEqual(ofD1.map((x) => x.hostname), [`${d1.id}.example.com`]);
  await rejectsWith(
    domains.assignDomain(sql, { hostname: 'Bad Host', workspaceId: 'default', environmentId: 'default', deploymentId: d1.id, kind: 'environment' }),
    '23514',
  );
});

test('agent tokens: stored hashed, resolved to their region, revocable', async () => {
  const { id, token } = await agentTokens.createAgentToken(sql, 'us-east-1');
  assert.equal(await agentTokens.regionForToken(sql, token), 'us-east-1');
  const [row] = await sql<{ tokenHash: string }[]>`SELECT token_hash FROM agent_tokens WHERE id = ${id}`;
  assert.notEqual(row!.tokenHash, token);
  assert.ok(!JSON.stringify(await sql`SELECT * FROM agent_tokens`).includes(token), 'the clear token is nowhere in the table');
  assert.equal(await agentTokens.regionForToken(sql, 'not-a-token'), undefined);
  assert.equal(await agentTokens.revokeAgentToken(sql, id), true);
  assert.equal(await agentTokens.regionForToken(sql, token), undefined);
  await rejectsWith(agentTokens.createAgentToken(sql, 'BAD REGION'), '23514');
});

test('feed epoch is stable until rotated', async () => {
  const a = await system.getFeedEpoch(sql);
  assert.equal(await system.getFeedEpoch(sql), a);
  const b = await system.rotateFeedEpoch(sql);
  assert.notEqual(a, b);
  assert.equal(await system.getFeedEpoch(sql), b);
});

test('batch reads for status reports: states of many deployments, many sentinels; events reach listeners at commit', async () => {
  const a = newDeployment();
  const b = newDeployment();
  await deployments.insertDeployment(sql, a);
  await deployments.insertDeployment(sql, b);
  await deployments.setDeploymentStatus(sql, b.id, 'deploying');
  const states = await deployments.statesOf(sql, [a.id, b.id, 'dep-missing']);
  assert.deepEqual(Object.fromEntries(states), { [a.id]: { status: 'pending', desiredState: 'running' }, [b.id]: { status: 'deploying', desiredState: 'running' } });
  assert.equal((await deployments.statesOf(sql, [])).size, 0);

  const s = await sentinels.ensureSentinel(sql, { id: newId('snt'), ...scope, region: 'ap-south-1', image: 'x:1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
  assert.deepEqual((await sentinels.getSentinels(sql, [s.sentinel.id, 'snt-missing'])).map((x) => x.id), [s.sentinel.id]);

  const got: events.LiveEvent[] = [];
  const unlisten = await events.listenEvents(sql, (e) => got.push(e));
  try {
    await assert.rejects(
      sql.begin(async (tx) => {
        await deployments.setDeploymentStatus(tx, a.id, 'failed', 'rolled back: never seen');
        throw new Error('abort');
      }),
    );
    await sql.begin(async (tx) => {
      await events.publishEvents(tx, [
        { type: 'rollout.wave', state: 'in_progress', wave: 0, waves: 2, succeeded: 0, failed: 0 },
        { type: 'rollout.wave', state: 'in_progress', wave: 1, waves: 2, succeeded: 1, failed: 0 },
      ]);
      await deployments.setDeploymentStatus(tx, b.id, 'ready');
    });
    await until(() => got.length >= 3, { what: 'the three events', show: () => got });
    assert.deepEqual(
      got.map((e) => (e.type === 'deployment.status' ? `${e.deploymentId}:${e.status}` : `wave ${e.type === 'rollout.wave' ? e.wave : '?'}`)),
      ['wave 0', 'wave 1', `${b.id}:ready`],
      'only the committed transaction published, in order',
    );
  } finally {
    await unlisten();
  }
});
