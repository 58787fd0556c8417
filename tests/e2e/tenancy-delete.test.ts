// Deleting an environment through the API against the whole system (ctrl, kube-sim, krane): a
// deployment into a new environment brings its sentinel, gossip policy and routes; the deletion
// is refused while the deployment runs, and once it is stopped, krane deletes the sentinel's
// objects, the CiliumNetworkPolicy and the routes ConfigMap from the cluster (issue 26: "stops
// and removes what it owns through the outbox").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { KubeClient } from '../../src/kube/client';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';

const stack = await testStack({ regions: ['us-east-1'] });
const kube = new KubeClient(stack.regions.get('us-east-1')!.sim.sim.kubeConfig());

/** Objects krane made for the environment in the sentinel namespace, by kind. */
async function owned(environmentId: string): Promise<string[]> {
  const selector = `unkey.com/environment.id=${environmentId}`;
  const kinds: [string, string][] = [['apps/v1', 'Deployment'], ['v1', 'Service'], ['cilium.io/v2', 'CiliumNetworkPolicy'], ['v1', 'ConfigMap']];
  const out: string[] = [];
  for (const [apiVersion, kind] of kinds) for (const o of (await kube.list(apiVersion, kind, SENTINEL_NAMESPACE, selector)).items) out.push(`${kind}/${o.metadata!.name}`);
  return out.sort();
}

test('deleting an environment is refused while it runs; once stopped, krane removes its sentinel, policy and routes', async () => {
  assert.equal((await stack.api('/v1/workspaces', { body: { id: 'ws-del', name: 'del' } })).status, 201);
  assert.equal((await stack.api('/v1/workspaces/ws-del/projects', { body: { id: 'prj-del', name: 'del' } })).status, 201);
  assert.equal((await stack.api('/v1/projects/prj-del/environments', { body: { id: 'env-del', slug: 'production', regions: ['us-east-1'] } })).status, 201);
  const dep = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1, environmentId: 'env-del' } });
  assert.equal(dep.status, 202, JSON.stringify(dep.body));
  const id = dep.body.id as string;
  await until(async () => (await stack.api(`/v1/deployments/${id}`)).body.status === 'ready', 30_000, 'ready');
  // Promote so the environment's routing table is in the region too.
  assert.equal((await stack.api(`/v1/deployments/${id}/promote`, { method: 'POST' })).status, 200);
  assert.ok((await stack.db.sql`SELECT count(*)::int AS n FROM domains WHERE environment_id = 'env-del'`)[0]!.n > 0, 'promoted: the environment has its hostname');
  const before = await until(async () => {
    const o = await owned('env-del');
    return o.some((x) => x.startsWith('Deployment/')) && o.some((x) => x.startsWith('CiliumNetworkPolicy/')) && o.some((x) => x.startsWith('ConfigMap/')) ? o : undefined;
  }, 20_000, 'sentinel, policy and routes applied');

  const busy = await stack.api('/v1/environments/env-del', { method: 'DELETE' });
  assert.equal(busy.status, 409, JSON.stringify(busy.body));
  assert.equal((await stack.api(`/v1/deployments/${id}/stop`, { method: 'POST' })).status, 200);
  await until(async () => (await stack.api('/v1/environments/env-del', { method: 'DELETE' })).status === 200, 20_000, 'deletion accepted once stopped');

  await until(async () => (await owned('env-del')).length === 0, 20_000, `krane deleted ${before.join(', ')}`);
  assert.equal((await stack.api('/v1/environments/env-del')).status, 404);
  // Its hostname is free for another environment.
  assert.equal((await stack.db.sql`SELECT count(*)::int AS n FROM domains WHERE environment_id = 'env-del'`)[0]!.n, 0);
});

test('a create racing the deletion of its environment is refused, leaving no deployment in a deleted environment', async () => {
  assert.equal((await stack.api('/v1/workspaces', { body: { id: 'ws-race', name: 'race' } })).status, 201);
  assert.equal((await stack.api('/v1/workspaces/ws-race/projects', { body: { id: 'prj-race', name: 'race' } })).status, 201);
  assert.equal((await stack.api('/v1/projects/prj-race/environments', { body: { id: 'env-race', slug: 'production', regions: ['us-east-1'] } })).status, 201);
  // A deletion holds the environment's lock (as the DELETE routes do) while the create's checks
  // pass; it commits while the create waits at its insert.
  let created: Promise<{ status: number; body: any }> | undefined;
  await stack.db.sql.begin(async (tx) => {
    await tx`SELECT id FROM environments WHERE id = 'env-race' FOR UPDATE`;
    created = stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1, environmentId: 'env-race' } });
    await until(async () => (await stack.db.sql`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND (relation = 'environments'::regclass OR locktype = 'transactionid')`)[0]!.n > 0, 5_000, 'the create waiting for the lock');
    await tx`UPDATE environments SET deleted_at = now() WHERE id = 'env-race'`;
  });
  const r = await created!;
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.match(JSON.stringify(r.body), /environment env-race not found/);
  assert.equal((await stack.db.sql`SELECT count(*)::int AS n FROM deployments WHERE environment_id = 'env-race'`)[0]!.n, 0);
});
