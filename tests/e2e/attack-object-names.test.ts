// Attack (after issue 32): Kubernetes object names of one tenant's environment can be another's.
// krane names an environment's routes ConfigMap `routes-<environment id>` and its gossip Service
// and policy `gossip-<environment id>` (src/kube/manifests/names.ts#objectName); past 52
// characters the name is folded to its first 41 characters, a hyphen and 10 hex of its SHA-256.
// A folded name is itself a valid short name, so a tenant that chooses an environment id of
// exactly that shape (45 characters, allowed by the id rule) gets objects with the same names as
// another tenant's environment whose id is 46 or more characters long (also allowed). Environment
// ids are public (events, hostnames, the model's "B's public ids"), and the hash is computable.
//
// What A then does to B, in the shared `sentinel` namespace, with an ordinary key:
// - deploying into its look-alike environment rewrites B's routes ConfigMap with A's hostname and
//   A's backends: B's sentinels, which read that ConfigMap, would send B's traffic to A's pods;
// - deleting its look-alike environment deletes B's routes ConfigMap (krane deletes by name).
// Each test states what B must keep observing; both fail on main at 8edb159.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { KubeClient } from '../../src/kube/client';
import { routesObjectName } from '../../src/kube/manifests/names';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';
import { deploymentIn, testStack, until } from '../helpers/stack';
import type { TestCtrl } from '../http/helpers';
import { makeKey, makeTenant } from './tenancy-helpers';

const REGION = 'us-east-1';
const stack = await testStack({ regions: [REGION] });
const t = { api: async (path: string, init?: any) => ({ ...(await stack.api(path, init)), text: '' }), db: stack.db } as unknown as TestCtrl;
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
const keyA = await makeKey(t, { workspaceId: A.workspaceId }, ['environments.write', 'deployments.write', 'deployments.read']);
const keyB = await makeKey(t, { workspaceId: B.workspaceId }, ['environments.write', 'deployments.write', 'deployments.read']);
const kube = new KubeClient(stack.regions.get(REGION)!.sim.sim.kubeConfig());

/** What the attacker computes from B's public environment id: the id whose `<prefix><id>` is,
 *  unfolded, the folded name of B's (the fold as names.ts does it at 8edb159). */
function lookalikeId(prefix: string, victimId: string): string {
  const raw = prefix + victimId;
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 10);
  return `${raw.slice(0, 41).replace(/-+$/, '')}-${hash}`.slice(prefix.length);
}

type RoutesDoc = { environmentId: string; hostname: string; backends: { deploymentId: string }[] };
async function routesDoc(name: string): Promise<RoutesDoc | null> {
  const cm = (await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: SENTINEL_NAMESPACE, name })) as { data?: Record<string, string> } | null;
  return cm?.data?.['routes.json'] ? (JSON.parse(cm.data['routes.json']) as RoutesDoc) : null;
}

async function deploy(environmentId: string, token: string): Promise<string> {
  const r = await stack.api('/v1/deployments', { token, body: { image: 'nginx:1.27', regions: [REGION], replicas: 1, environmentId } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await deploymentIn(stack, r.body.id, ['ready']);
  return r.body.id;
}

async function longEnvironmentOfB(id: string, slug: string): Promise<{ hostname: string; depB: string; name: string }> {
  const env = await stack.api(`/v1/projects/${B.projectId}/environments`, { token: keyB.key, body: { id, slug, regions: [REGION] } });
  assert.equal(env.status, 201, JSON.stringify(env.body));
  const depB = await deploy(id, keyB.key);
  const name = routesObjectName(id);
  await until(async () => (await routesDoc(name))?.backends.some((b) => b.deploymentId === depB), 15_000, `B's routes ConfigMap ${name}`);
  return { hostname: env.body.hostname, depB, name };
}

test("A's environment whose id is B's folded routes name does not take over B's routes ConfigMap", async () => {
  const idB = 'checkout-production-eu-central-1-customer-api-b'; // 47 characters: a valid chosen id
  const b = await longEnvironmentOfB(idB, 'checkout');
  const idA = lookalikeId('routes-', idB);
  const envA = await stack.api(`/v1/projects/${A.projectId}/environments`, { token: keyA.key, body: { id: idA, slug: 'lookalike', regions: [REGION] } });
  if (envA.status === 201) {
    const depA = await deploy(idA, keyA.key);
    // Wait for A's table to reach the cluster under whatever name A's environment gets.
    await until(async () => (await routesDoc(routesObjectName(idA)))?.backends.some((x) => x.deploymentId === depA), 15_000, "A's routes");
  }
  // Whatever A was allowed: the ConfigMap B's environment is routed by still routes B's hostname to B.
  const doc = await routesDoc(b.name);
  assert.deepEqual(
    doc && { environmentId: doc.environmentId, hostname: doc.hostname, backends: doc.backends.map((x) => x.deploymentId) },
    { environmentId: idB, hostname: b.hostname, backends: [b.depB] },
    `B's routes ConfigMap ${b.name} now holds ${JSON.stringify(doc)}`,
  );
});

test("deleting A's look-alike environment leaves B's routes ConfigMap in place", async () => {
  const idB = 'payments-production-ap-southeast-2-public-api-b'; // 47 characters
  const b = await longEnvironmentOfB(idB, 'payments');
  const idA = lookalikeId('routes-', idB);
  const envA = await stack.api(`/v1/projects/${A.projectId}/environments`, { token: keyA.key, body: { id: idA, slug: 'lookalike2', regions: [REGION] } });
  if (envA.status === 201) {
    const depA = await deploy(idA, keyA.key);
    await until(async () => (await routesDoc(routesObjectName(idA)))?.backends.some((x) => x.deploymentId === depA), 15_000, "A's routes");
    assert.equal((await stack.api(`/v1/deployments/${depA}/stop`, { token: keyA.key, method: 'POST' })).status, 200);
    await deploymentIn(stack, depA, ['stopped']);
    const del = await stack.api(`/v1/environments/${idA}`, { token: keyA.key, method: 'DELETE' });
    assert.equal(del.status, 200, JSON.stringify(del.body));
    // krane has acted on A's deletion once A's own name holds no table of A's any more.
    await until(async () => (await routesDoc(routesObjectName(idA)))?.environmentId !== idA, 15_000, "A's routes gone");
  }
  // B's deployment was never touched, so B's table must be where B's sentinels look for it.
  const doc = await routesDoc(b.name);
  assert.equal(doc?.environmentId, idB, `B's routes ConfigMap ${b.name}: ${JSON.stringify(doc)}`);
  assert.deepEqual(doc.backends.map((x) => x.deploymentId), [b.depB]);
});
