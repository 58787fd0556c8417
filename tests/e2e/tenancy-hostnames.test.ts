// One owner per hostname (issue 32). Every name an environment or a deployment is reached on
// (given, generated `<app>-<slug>.<apex>`, per-deployment `dep-<id>.<apex>`, the apex) is claimed
// once, in a table whose key the database enforces; a clash is 409 ERR_HOSTNAME_TAKEN, and names
// of the generated shapes and the apex are reserved (400). The domain write never moves a name to
// another environment. Found by attack: A's environment given B's hostname was 201, and A's next
// ready deploy took B's hostname (B's deployment lost its domain, both routes ConfigMaps named it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeClient } from '../../src/kube/client';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';
import { domains, hostnameClaims } from '../../src/store';
import { deploymentIn, testStack } from '../helpers/stack';
import type { TestCtrl } from '../http/helpers';
import { insertDeploymentOf, makeKey, makeTenant } from './tenancy-helpers';

const stack = await testStack({ regions: ['us-east-1'] });
const APEX = 'unkey.local';
// tenancy-helpers speak to a TestCtrl; the stack's api has the same shape (text aside).
const t = { api: async (path: string, init?: any) => ({ ...(await stack.api(path, init)), text: '' }), db: stack.db } as unknown as TestCtrl;
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
const keyA = await makeKey(t, { workspaceId: A.workspaceId }, ['environments.write', 'deployments.write', 'deployments.read']);

const deployInto = async (environmentId: string, token?: string) => {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1, environmentId }, ...(token ? { token } : {}) });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id as string;
};
const hostnameOf = async (environmentId: string) => (await stack.api(`/v1/environments/${environmentId}`)).body.hostname as string;

/** Every routes ConfigMap of the region that names `hostname`, by environment. */
async function routesNaming(hostname: string): Promise<string[]> {
  const api = new KubeClient(stack.regions.get('us-east-1')!.sim.sim.kubeConfig());
  const list = (await api.list('v1', 'ConfigMap', SENTINEL_NAMESPACE)).items as unknown as { metadata: { name: string }; data?: Record<string, string> }[];
  return list.filter((cm) => cm.metadata.name.startsWith('routes-') && JSON.parse(cm.data?.['routes.json'] ?? '{}').hostname === hostname).map((cm) => cm.metadata.name);
}

const newEnv = (body: Record<string, unknown>, token = keyA.key) => stack.api(`/v1/projects/${A.projectId}/environments`, { body, token });

test("another tenant's generated hostname cannot be given (a generated shape: 400, taken or not), its claim is B's, and B keeps its domain and its routes", async () => {
  const depB = await deployInto(B.environmentId);
  await deploymentIn(stack, depB, ['ready']);
  const hostB = await hostnameOf(B.environmentId);
  const r = await newEnv({ slug: 'takeover', hostname: hostB });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.error.details[0].field, 'hostname');
  // The same shape nobody holds is answered alike: the answer says nothing of B.
  const ghost = await newEnv({ slug: 'takeover', hostname: hostB.replace(/^app-[a-z2-7]+/, 'app-aaaaaaaaaaaaaaaa') });
  assert.equal(JSON.stringify(ghost.body).replace(/app-[a-z2-7]+-production/, 'X'), JSON.stringify(r.body).replace(/app-[a-z2-7]+-production/, 'X'));
  // Below the API's rule, the database's: the name is claimed by B's environment, B's deployment by B's too.
  assert.equal((await hostnameClaims.ownerOf(stack.db.sql, hostB))?.environmentId, B.environmentId);
  assert.equal((await hostnameClaims.ownerOf(stack.db.sql, `${depB}.${APEX}`))?.environmentId, B.environmentId);
  await assert.rejects(hostnameClaims.claimHostname(stack.db.sql, { hostname: hostB, kind: 'environment', workspaceId: A.workspaceId, environmentId: A.environmentId }), (e: any) => e.code === 'ERR_HOSTNAME_TAKEN');
  // A deploys into its own environment; B's names stay B's.
  const depA = await deployInto(A.environmentId, keyA.key);
  await deploymentIn(stack, depA, ['ready']);
  assert.equal((await domains.holderOf(stack.db.sql, hostB))?.deploymentId, depB);
  assert.deepEqual((await stack.api(`/v1/deployments/${depB}`)).body.domains.map((d: any) => d.hostname).sort(), [hostB, `${depB}.${APEX}`].sort());
  assert.deepEqual(await routesNaming(hostB), [`routes-${B.environmentId}`]);
});

test('names of the generated shapes under the apex, and the apex itself, are reserved: 400 naming hostname', async () => {
  const [dep] = await stack.db.sql<{ id: string }[]>`SELECT id FROM deployments WHERE environment_id = ${B.environmentId} LIMIT 1`;
  const reserved = [`${dep!.id}.${APEX}`, `dep-zzzzzzzzzzzzzzzz.${APEX}`, APEX, `app-abcdefghijklmnop-x.${APEX}`, `default-x.${APEX}`, `snt-a.${APEX}`];
  for (const [i, hostname] of reserved.entries()) {
    const r = await newEnv({ slug: `reserved-${i}`, hostname });
    assert.equal(r.status, 400, `${hostname}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.details[0].field, 'hostname');
  }
  // Other names under the apex, and names elsewhere, are a tenant's to take.
  assert.equal((await newEnv({ slug: 'shop', hostname: `shop.${APEX}` })).status, 201);
});

test("a given hostname another tenant holds is 409 ERR_HOSTNAME_TAKEN, answered as for one's own", async () => {
  assert.equal((await stack.api(`/v1/projects/${B.projectId}/environments`, { body: { slug: 'web', hostname: 'www.b.example' } })).status, 201);
  assert.equal((await newEnv({ slug: 'web', hostname: 'www.a.example' })).status, 201);
  const theirs = await newEnv({ slug: 'web2', hostname: 'www.b.example' });
  const mine = await newEnv({ slug: 'web3', hostname: 'www.a.example' });
  assert.equal(theirs.status, 409);
  assert.equal(theirs.body.error.code, 'ERR_HOSTNAME_TAKEN');
  assert.equal(JSON.stringify(theirs.body).replace('www.b.example', 'X'), JSON.stringify(mine.body).replace('www.a.example', 'X'));
});

test("the domain write never moves a hostname to another environment", async () => {
  const hostB = await hostnameOf(B.environmentId);
  await insertDeploymentOf(t, A, 'dep-aaaaaaaaaaaaaaaa');
  const before = await domains.holderOf(stack.db.sql, hostB);
  assert.ok(before, "B's hostname has its domain");
  await assert.rejects(
    domains.assignDomain(stack.db.sql, { hostname: hostB, workspaceId: A.workspaceId, environmentId: A.environmentId, deploymentId: 'dep-aaaaaaaaaaaaaaaa', kind: 'environment' }),
    (err: any) => err.code === 'ERR_HOSTNAME_TAKEN',
  );
  assert.deepEqual(await domains.holderOf(stack.db.sql, hostB), before);
});

test('deleting an environment frees its names for anyone', async () => {
  const e = await stack.api(`/v1/projects/${B.projectId}/environments`, { body: { slug: 'gone', hostname: 'gone.b.example' } });
  assert.equal(e.status, 201);
  assert.equal((await stack.api(`/v1/environments/${e.body.id}`, { method: 'DELETE' })).status, 200);
  assert.equal((await newEnv({ slug: 'reuse', hostname: 'gone.b.example' })).status, 201);
  // And its generated name: a new environment of B's project with the same slug gets it again.
  assert.equal((await stack.api(`/v1/projects/${B.projectId}/environments`, { body: { slug: 'gone' } })).status, 201);
});
