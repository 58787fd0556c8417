// Write denials (src/kube-sim/denials.ts): API writes of a named object are refused as a
// validating admission webhook refuses them (403 with the webhook's message), while the
// simulator's own controllers keep its status current; lifting the denial lets writes through.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { PatchStrategy } from '@kubernetes/client-node';
import { deployment, startSim, waitFor, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim({ readyDelayMs: 5 });
});
after(() => f.close());

const apply = (obj: unknown) => f.objects.patch(structuredClone(obj) as any, undefined, undefined, 'krane', true, PatchStrategy.ServerSideApply);
const refusal = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e: any) {
    return { code: e.code as number, body: typeof e.body === 'string' ? JSON.parse(e.body) : e.body };
  }
  throw new Error('expected the write to be refused');
};
const admin = (method: string, body?: unknown) => f.fetch(`${f.url}/_sim/denials`, { method, ...(body ? { body: JSON.stringify(body) } : {}) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

test('a denied object: creates, applies and updates are refused as a webhook refuses them; its status still moves', async () => {
  await apply(deployment('guarded', 'app:v1', 1));
  f.sim.denyWrites('default', 'guarded', 'image app:v2 is not allowed');
  const r = await refusal(apply(deployment('guarded', 'app:v2', 1)));
  assert.equal(r.code, 403);
  assert.equal(r.body.message, 'admission webhook "deny.kube-sim.local" denied the request: image app:v2 is not allowed');
  assert.equal((await refusal(f.core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'guarded' }, spec: { ports: [{ port: 80 }] } } }))).code, 403, 'any kind of that name');
  // The controllers are not API clients: the Deployment still becomes available.
  await waitFor('the guarded Deployment available', async () => (await f.apps.readNamespacedDeployment({ name: 'guarded', namespace: 'default' })).status?.availableReplicas === 1);
  assert.equal((await f.apps.readNamespacedDeployment({ name: 'guarded', namespace: 'default' })).spec?.template.spec?.containers[0]?.image, 'app:v1', 'nothing of the refused write was kept');
  assert.equal(f.sim.allowWrites('default', 'guarded'), true);
  await apply(deployment('guarded', 'app:v2', 1));
  assert.equal((await f.apps.readNamespacedDeployment({ name: 'guarded', namespace: 'default' })).spec?.template.spec?.containers[0]?.image, 'app:v2');
});

test('the admin API sets, lists and lifts denials, and names a bad body', async () => {
  assert.deepEqual(await admin('POST', { namespace: 'default', name: 'x', reason: 'no' }), { status: 200, body: { namespace: 'default', name: 'x', denied: true } });
  assert.deepEqual((await admin('GET')).body, { denials: [{ namespace: 'default', name: 'x', reason: 'no' }] });
  assert.equal((await admin('DELETE', { namespace: 'default', name: 'x' })).body.lifted, true);
  const bad = await admin('POST', { namespace: 'default', name: 'x' });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body.details, ['reason: must be a non-empty string']);
});
