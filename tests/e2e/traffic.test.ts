// Traffic is desired state (issue 13): the environment's routing table follows ready deploys and
// promotes, reaches every region's cluster as ConfigMap routes-<env>, and leaves a region whose
// backends are gone. The ConfigMaps are read through the unchanged Kubernetes client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';
import { KubeClient } from '../../src/kube/client';
import { routes, withTx } from '../../src/store';

const stack = await testStack();
const BOTH = ['us-east-1', 'eu-west-1'];

const create = async (regions: string[]) => {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions, replicas: 2 } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id as string;
};
const ready = (id: string) => until(async () => (await stack.api(`/v1/deployments/${id}`)).body.status === 'ready', 20_000, `${id} ready`);

/** routes.json of the environment's ConfigMap in a region, or null when there is none. */
async function routesIn(region: string): Promise<any | null> {
  const api = new KubeClient(stack.regions.get(region)!.sim.sim.kubeConfig());
  const cm = await api.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: SENTINEL_NAMESPACE, name: 'routes-default' });
  return cm ? { labels: cm.metadata?.labels, doc: JSON.parse((cm as any).data['routes.json']) } : null;
}
const weights = (doc: any) => doc.backends.map((b: any) => [b.deploymentId, b.weight]);

test('ready and promote route the environment; every region holds the table as a ConfigMap; the API shows it', async () => {
  const a = await create(BOTH);
  await ready(a);
  const t = await stack.api('/v1/environments/default/traffic');
  assert.equal(t.status, 200);
  assert.deepEqual(t.body, { environmentId: 'default', hostname: 'default-default.unkey.local', backends: [{ deploymentId: a, weight: 100 }] });
  for (const region of BOTH) {
    const cm = await until(async () => {
      const x = await routesIn(region);
      return x && x.doc.backends[0]?.deploymentId === a ? x : undefined;
    }, 10_000, `routes in ${region}`);
    assert.equal(cm.labels['app.kubernetes.io/component'], 'routes');
    assert.equal(cm.labels['app.kubernetes.io/managed-by'], 'krane');
    assert.equal(cm.labels['unkey.com/environment.id'], 'default');
    assert.equal(cm.doc.region, region);
    assert.deepEqual(cm.doc.backends[0].addresses, [0, 1].map((i) => `${a}-${i}.${a}.unkey.svc.cluster.local`));
  }
  // The instances krane reported carry the same stable addresses the table names.
  const detail = (await stack.api(`/v1/deployments/${a}`)).body;
  const reported = detail.instances.filter((i: any) => i.region === 'us-east-1').map((i: any) => i.address).sort();
  assert.deepEqual(reported, (await routesIn('us-east-1')).doc.backends[0].addresses);

  // A newer deployment in one region takes all traffic; the other region's table goes away.
  const b = await create(['us-east-1']);
  await ready(b);
  await until(async () => (await routesIn('us-east-1'))?.doc.backends[0]?.deploymentId === b, 10_000, 'us-east-1 routes to b');
  await until(async () => (await routesIn('eu-west-1')) === null, 10_000, 'eu-west-1 table deleted');

  // Promote moves it back, to both regions.
  assert.equal((await stack.api(`/v1/deployments/${a}/promote`, { method: 'POST' })).status, 200);
  for (const region of BOTH) await until(async () => JSON.stringify(weights((await routesIn(region))?.doc ?? { backends: [] })) === JSON.stringify([[a, 100]]), 10_000, `${region} back on a`);
  assert.deepEqual((await stack.api('/v1/environments/default/traffic')).body.backends, [{ deploymentId: a, weight: 100 }]);
});

test('a weighted table reaches the ConfigMap of each region as written; bad weights are refused and write nothing', async () => {
  const a = await create(BOTH);
  const b = await create(BOTH);
  await ready(a);
  await ready(b);
  await withTx(stack.db.sql, (tx) => routes.setRoutes(tx, { environmentId: 'default', workspaceId: 'default', hostname: 'default-default.unkey.local', backends: [{ deploymentId: a, weight: 90 }, { deploymentId: b, weight: 10 }] }));
  for (const region of BOTH) {
    await until(async () => JSON.stringify(weights((await routesIn(region))?.doc ?? { backends: [] })) === JSON.stringify([[a, 90], [b, 10]]), 10_000, `${region} 90/10`);
  }
  const before = await routes.getRoutes(stack.db.sql, 'default');
  for (const bad of [[{ deploymentId: a, weight: 90 }], [{ deploymentId: a, weight: 101 }, { deploymentId: b, weight: -1 }], [], [{ deploymentId: a, weight: 50 }, { deploymentId: a, weight: 50 }]]) {
    await assert.rejects(routes.setRoutes(stack.db.sql, { environmentId: 'default', workspaceId: 'default', hostname: 'h', backends: bad }), routes.InvalidRoutesError);
  }
  assert.deepEqual((await routes.getRoutes(stack.db.sql, 'default'))!.backends, before!.backends);
});

test('traffic of an unknown environment is a 404', async () => {
  const r = await stack.api('/v1/environments/nope/traffic');
  assert.equal(r.status, 404);
  assert.equal(r.body.error?.code ?? r.body.code, 'ERR_NOT_FOUND');
});
