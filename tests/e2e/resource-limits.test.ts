// Seed 001's "Creating → Failed: resource limits" on the whole stack: each region's simulated
// cluster is one node of 1.5 CPU (kube-sim's `nodes` option). The environment's sentinels take
// 2 × 250m, a first deployment 500m; a second one asking 800m fits no node: its pod stays
// Pending (Unschedulable), krane reports the instance failed with the scheduler's words, and
// the deploy fails at once with that reason instead of waiting out its timeout ("timed out").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, deploymentIn } from '../helpers/stack';

const GI = 1024 ** 3;
// The deploy timeout is far past the test's wait: only the fast path can answer in time.
const stack = await testStack({ sim: { minReadyScale: 0.001, nodes: { count: 1, cpuMilli: 1500, memoryBytes: 8 * GI } }, ctrl: { settings: { deployTimeout: '10m' } } });
const regions = ['us-east-1', 'eu-west-1'];

const deploy = async (cpuMillicores: number) => {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions, replicas: 1, cpuMillicores, memoryMib: 128, force: true } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id as string;
};

test('a deployment no node has room for fails fast with the scheduler\'s reason, and its instances say resource limits', async () => {
  const first = await deploy(500);
  await deploymentIn(stack, first, ['ready']);
  const second = await deploy(800);
  const d = await deploymentIn(stack, second, ['failed', 'ready']);
  assert.equal(d.status, 'failed');
  assert.match(d.error, /: resource limits: 0\/1 nodes are available: 1 Insufficient cpu\. /, d.error);
  assert.doesNotMatch(d.error, /timed out/);
  const rows = await stack.db.sql<{ status: string; reason: string }[]>`SELECT status, reason FROM instances WHERE deployment_id = ${second}`;
  // The failed deploy stops its topology, which removes its rows: those left, if any, say why.
  assert.ok(rows.every((r) => r.status === 'failed' && r.reason.startsWith('resource limits: ')), JSON.stringify(rows));
  // The first one keeps running.
  assert.equal((await stack.api(`/v1/deployments/${first}`)).body.status, 'ready');
});
