// krane is down while desired state changes; when it returns, its full sync converges the
// cluster: a deployment stopped meanwhile is deleted, and a resource that vanished from the
// database entirely is garbage-collected because the snapshot no longer mentions it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { KubeClient } from '../../src/kube/client';
import { WORKLOAD_NAMESPACE } from '../../src/sync/wire';

const stack = await testStack({ regions: ['us-east-1'] });
const kube = new KubeClient(stack.regions.get('us-east-1')!.sim.sim.kubeConfig());
const statefulSets = async (id: string) => (await kube.list('apps/v1', 'StatefulSet', WORKLOAD_NAMESPACE, `unkey.com/deployment.id=${id}`)).items;

async function deployReady(): Promise<string> {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  await until(async () => (await stack.api(`/v1/deployments/${r.body.id}`)).body.status === 'ready', 20_000, 'ready');
  return r.body.id;
}

test('a deployment stopped while krane was down is removed by the full sync when krane returns', async () => {
  const stopped = await deployReady();
  const vanished = await deployReady();
  const kept = await deployReady();
  await stack.stopKrane('us-east-1');

  assert.equal((await stack.api(`/v1/deployments/${stopped}/stop`, { method: 'POST' })).status, 200);
  // A resource that disappears from the database altogether (and with it its outbox rows):
  // nothing will ever say "delete" about it; only GC after a complete snapshot can.
  await stack.db.sql`DELETE FROM deployment_changes WHERE resource_id = ${vanished}`;
  await stack.db.sql`DELETE FROM domains WHERE deployment_id = ${vanished}`;
  await stack.db.sql`DELETE FROM hostname_claims WHERE deployment_id = ${vanished}`;
  await stack.db.sql`DELETE FROM deployments WHERE id = ${vanished}`;
  // krane is closed (stopKrane resolved), so no one can have acted on it: both still stand.
  assert.equal((await statefulSets(stopped)).length, 1, 'nothing happens while krane is down');
  assert.equal((await statefulSets(vanished)).length, 1);

  await stack.restartKrane('us-east-1');
  await until(async () => (await statefulSets(stopped)).length === 0, 15_000, 'stopped deployment removed');
  await until(async () => (await statefulSets(vanished)).length === 0, 15_000, 'vanished deployment garbage-collected');
  assert.equal((await statefulSets(kept)).length, 1, 'a deployment still desired is kept');
  // The simulator's deletion audit: requests deleted exactly the two deployments' objects, and
  // nothing of the one still desired was ever deleted (not even deleted and recreated).
  const audit = (await (await fetch(`${stack.regions.get('us-east-1')!.sim.sim.url}/_sim/audit/deletions`)).json()) as { entries: any[] };
  const byRequest = audit.entries.filter((e) => e.cause === 'request' && e.labels?.['unkey.com/deployment.id']);
  assert.deepEqual([...new Set(byRequest.map((e) => e.labels['unkey.com/deployment.id']))].sort(), [stopped, vanished].sort());
  assert.ok(!audit.entries.some((e) => e.labels?.['unkey.com/deployment.id'] === kept), 'nothing of the kept deployment was deleted');
});
