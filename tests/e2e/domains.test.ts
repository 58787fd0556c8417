// The environment's domain follows the newest ready deployment: an older deploy that finishes
// late does not take it back, a restart (stop, start) does not either; promote moves it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deploymentIn, testStack } from '../helpers/stack';
import { domains } from '../../src/store';

const stack = await testStack({ regions: ['us-east-1'] });
const sim = stack.regions.get('us-east-1')!.sim.sim;
const ENV_HOST = 'default-default.unkey.local';

const create = async (image: string) => (await stack.api('/v1/deployments', { body: { image, regions: ['us-east-1'], replicas: 1 } })).body.id as string;
const ready = (id: string) => deploymentIn(stack, id, ['ready']);
const holder = async () => (await domains.holderOf(stack.db.sql, ENV_HOST))?.deploymentId;

test('an older deployment that becomes ready after a newer one leaves the environment domain alone', async () => {
  // The older deployment's pods are held by the simulator until the newer one is ready: the
  // order is made, not left to which image happens to start faster.
  sim.holdImage('registry.local/app:1');
  const older = await create('registry.local/app:1');
  const newer = await create('registry.local/app:2');
  await ready(newer);
  assert.equal(await holder(), newer);
  assert.notEqual((await stack.api(`/v1/deployments/${older}`)).body.status, 'ready', 'the older one is still on its way');
  sim.releaseImage('registry.local/app:1');
  await ready(older);
  assert.equal(await holder(), newer, 'the newer deployment keeps the domain');
  const olderDomains = (await stack.api(`/v1/deployments/${older}`)).body.domains.map((d: any) => d.hostname);
  assert.deepEqual(olderDomains, [`${older}.unkey.local`], 'it still gets its own hostname');

  // Promote moves it explicitly; a restart of the other one does not move it back.
  assert.equal((await stack.api(`/v1/deployments/${older}/promote`, { method: 'POST' })).status, 200);
  assert.equal(await holder(), older);
  assert.equal((await stack.api(`/v1/deployments/${newer}/stop`, { method: 'POST' })).status, 200);
  await deploymentIn(stack, newer, ['stopped']);
  assert.equal((await stack.api(`/v1/deployments/${newer}/start`, { method: 'POST' })).status, 200);
  await ready(newer);
  assert.equal(await holder(), older, 'a restart leaves the promoted deployment in place');
});
