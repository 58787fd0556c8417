// krane's --resync-interval as wired (README): with 1s, the agent runs a full sync (snapshot and
// GC) about every second, seen from outside on its /metrics; and a resource that vanished from
// the database without a delete ever being sent is collected by one of those periodic syncs,
// with krane never restarted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { KubeClient } from '../../src/kube/client';
import { WORKLOAD_NAMESPACE } from '../../src/sync/wire';

const stack = await testStack({ regions: ['us-east-1'], krane: { resyncInterval: '1s' } });
const krane = () => stack.regions.get('us-east-1')!.krane;
const fullSyncs = async () => {
  const text = await (await fetch(`${krane().url}/metrics`)).text();
  return Number(/^krane_feed\{[^}]*counter="snapshotsCompleted"[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0);
};

test('--resync-interval 1s: full syncs keep coming, and one of them collects what the database forgot', async () => {
  const first = await until(async () => ((await fullSyncs()) >= 1 ? fullSyncs() : undefined), 15_000, 'first full sync');
  await until(async () => (await fullSyncs()) >= first + 3, 15_000, 'three more full syncs');

  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  const id = r.body.id as string;
  await until(async () => (await stack.api(`/v1/deployments/${id}`)).body.status === 'ready', 20_000, 'ready');
  const kube = new KubeClient(stack.regions.get('us-east-1')!.sim.sim.kubeConfig());
  const sets = async () => (await kube.list('apps/v1', 'StatefulSet', WORKLOAD_NAMESPACE, `unkey.com/deployment.id=${id}`)).items.length;
  assert.equal(await sets(), 1);
  // Gone from the database with its outbox rows: no delete will ever be streamed for it.
  await stack.db.sql`DELETE FROM deployment_changes WHERE resource_id = ${id}`;
  await stack.db.sql`DELETE FROM domains WHERE deployment_id = ${id}`;
  await stack.db.sql`DELETE FROM instances WHERE deployment_id = ${id}`;
  await stack.db.sql`DELETE FROM deployment_topology WHERE deployment_id = ${id}`;
  await until(async () => (await sets()) === 0, 15_000, 'collected by a periodic full sync');
});
