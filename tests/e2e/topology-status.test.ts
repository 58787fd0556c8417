// Seed 001's topology states (issue 25) come from krane's reports, not from what ctrl asked:
// with the region's krane stopped a new deployment stays `starting` and a stopped one stays
// `stopping`, however long; krane's reports move them to `started` and `stopped`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pause } from '../helpers/wait';
import { testStack, until } from '../helpers/stack';

const stack = await testStack({ regions: ['us-east-1'] });
const REGION = 'us-east-1';

const topologyStatus = async (id: string) => (await stack.api(`/v1/deployments/${id}`)).body.topology.find((t: any) => t.region === REGION)?.status as string | undefined;
const waitFor = (id: string, status: string) => until(async () => (await topologyStatus(id)) === status || undefined, 20_000, `${id} ${status} in ${REGION}`);
const gauge = async (status: string) => {
  const text = await (await fetch(stack.ctrl.url + '/metrics')).text();
  return Number(new RegExp(`^deployment_topology_status\\{status="${status}"[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
};

test('topology status walks starting → started → stopping → stopped, each on krane\'s evidence, in the API and the metric', async () => {
  const seen: string[] = [];
  await stack.stopKrane(REGION);
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], replicas: 2 } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.id;
  await waitFor(id, 'starting');
  seen.push('starting');
  assert.equal(await gauge('starting'), 1);
  // No agent, no pods: it stays starting. (An absence can only be sampled: the pause gives a
  // wrong transition a chance; nothing waits on it.)
  await pause(500);
  assert.equal(await topologyStatus(id), 'starting');

  await stack.restartKrane(REGION);
  await waitFor(id, 'started');
  seen.push('started');
  assert.equal(await gauge('started'), 1);
  assert.equal((await until(async () => {
    const d = (await stack.api(`/v1/deployments/${id}`)).body;
    return d.status === 'ready' ? d : undefined;
  }, 20_000, 'ready')).status, 'ready');

  await stack.stopKrane(REGION);
  assert.equal((await stack.api(`/v1/deployments/${id}/stop`, { method: 'POST' })).status, 200);
  await waitFor(id, 'stopping');
  seen.push('stopping');
  assert.equal(await gauge('stopping'), 1);
  // ctrl asked for the stop, but the pods are still there as far as krane last saw (sampled
  // after a pause, as above).
  await pause(500);
  assert.equal(await topologyStatus(id), 'stopping');

  await stack.restartKrane(REGION);
  await waitFor(id, 'stopped');
  seen.push('stopped');
  assert.equal(await gauge('stopped'), 1);
  assert.deepEqual(seen, ['starting', 'started', 'stopping', 'stopped']);
});
