// An operator's stop against the traffic table and the walks that move it: a stop takes the
// deployment's traffic away, so no later walk or abort can send traffic back to it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';
import { KubeClient } from '../../src/kube/client';

const stack = await testStack();
const BOTH = ['us-east-1', 'eu-west-1'];

async function create(strategy?: unknown): Promise<string> {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: BOTH, replicas: 1, ...(strategy ? { strategy } : {}) } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id;
}
const status = (id: string, statuses: string[], ms = 30_000) =>
  until(async () => {
    const d = (await stack.api(`/v1/deployments/${id}`)).body;
    return statuses.includes(d.status) ? d : undefined;
  }, ms, `${id} in ${statuses.join('/')}`);
const post = (id: string, action: string) => stack.api(`/v1/deployments/${id}/${action}`, { method: 'POST' });
const table = async () => ((await stack.api('/v1/environments/default/traffic')).body.backends as { deploymentId: string; weight: number }[]).map((b) => `${b.deploymentId}:${b.weight}`);

/** The weights of the environment's routes ConfigMap in a region ([] when there is none). */
async function weights(region: string): Promise<string[]> {
  const api = new KubeClient(stack.regions.get(region)!.sim.sim.kubeConfig());
  const cm = await api.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: SENTINEL_NAMESPACE, name: 'routes-default' });
  if (!cm) return [];
  return JSON.parse((cm as any).data['routes.json']).backends.map((b: any) => `${b.deploymentId}:${b.weight}`);
}
const sameIn = (region: string, expected: string[], ms = 10_000) =>
  until(async () => JSON.stringify(await weights(region)) === JSON.stringify(expected), ms, `${region} routes ${expected.join(',') || 'none'}`);

test('a stop takes the deployment\'s traffic away; a canary after it has no stable to walk from; a start brings it back to an empty table', async () => {
  const old = await create();
  await status(old, ['ready']);
  for (const r of BOTH) await sameIn(r, [`${old}:100`]);

  assert.equal((await post(old, 'stop')).status, 200);
  await status(old, ['stopped'], 10_000);
  assert.deepEqual(await table(), [], 'the stopped deployment was the only backend: nothing serves the environment');
  for (const r of BOTH) await sameIn(r, []);

  // A start brings the instances back, and with nothing else serving, the traffic too.
  assert.equal((await post(old, 'start')).status, 200);
  await status(old, ['ready']);
  assert.deepEqual(await table(), [`${old}:100`]);
  for (const r of BOTH) await sameIn(r, [`${old}:100`]);

  // Stopped again: a canary that starts now must not take it as its stable (an abort or a failing
  // gate would then send 100% to a deployment without instances).
  assert.equal((await post(old, 'stop')).status, 200);
  await status(old, ['stopped'], 10_000);
  const canary = await create({ type: 'canary', steps: [{ weight: 10, pause: '60s' }] });
  const done = await status(canary, ['ready', 'failed', 'rolled_back']);
  assert.equal(done.status, 'ready', done.error);
  assert.deepEqual(await table(), [`${canary}:100`]);
  for (const r of BOTH) await sameIn(r, [`${canary}:100`]);
});
