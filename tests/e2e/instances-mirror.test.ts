// Instance rows mirror what krane reports and nothing else. Chaos seed 12 found ctrl deleting
// them itself when a deploy ended stopped: a region whose krane could not act on the stop kept
// its pod running, krane had already reported it (and reports a pod again only when it
// changes), so after a start the deploy waited forever for a pod that was there all along.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';

const stack = await testStack();

const status = async (id: string) => (await stack.api(`/v1/deployments/${id}`)).body;
const simChaos = async (region: string, method: string, body?: unknown) => {
  const r = await fetch(`${stack.regions.get(region)!.sim.url}/_sim/chaos`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
  assert.equal(r.status, 200, await r.text());
};

test('a deploy stopped mid-way keeps the instances krane reported; started again it becomes ready without a new report', async () => {
  // The environment's sentinels first, so the deploy below waits on instances alone.
  const warm = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 1 } });
  await until(async () => (await status(warm.body.id)).status === 'ready', 30_000, 'sentinels up');
  // us-east-1 then stops answering, so the deploy is still waiting when the stop comes.
  await stack.stopKrane('us-east-1');
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 1 } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id: string = created.body.id;
  await until(async () => (await status(id)).instances.some((i: any) => i.region === 'eu-west-1' && i.status === 'running'), 20_000, 'eu-west-1 reported running');

  // eu-west-1's API server refuses every delete for a while: the stop cannot take the pod away.
  await simChaos('eu-west-1', 'POST', { mode: 'error', ratio: 1, durationMs: 60_000, verbs: ['delete', 'deletecollection'] });
  try {
    assert.equal((await stack.api(`/v1/deployments/${id}/stop`, { method: 'POST' })).status, 200);
    await until(async () => (await status(id)).status === 'stopped', 20_000, 'stopped');
    // The pod is still there, and so is its row: ctrl shows what krane saw, not what it wished.
    assert.ok((await status(id)).instances.some((i: any) => i.region === 'eu-west-1' && i.status === 'running'), 'the running pod is still listed');
    assert.equal((await stack.api(`/v1/deployments/${id}/start`, { method: 'POST' })).status, 200);
  } finally {
    await simChaos('eu-west-1', 'DELETE');
  }
  await stack.restartKrane('us-east-1');
  await until(async () => (await status(id)).status === 'ready', 30_000, 'ready again with the pod that never went');
  const d = await status(id);
  assert.deepEqual(d.topology.map((t: any) => `${t.region} ${t.running}/${t.wanted}`).sort(), ['eu-west-1 1/1', 'us-east-1 1/1']);
});
