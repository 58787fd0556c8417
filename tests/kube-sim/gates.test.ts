// Image gates (src/kube-sim/workloads/gates.ts): a pod of a held image waits before its
// containers start, whatever the ready delay, until the image is released; then it goes on to
// Running and Ready. Tests use them to make one workload ready after another.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { PatchStrategy, type V1Pod } from '@kubernetes/client-node';
import { deployment, startSim, waitFor, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim({ readyDelayMs: 5 });
});
after(() => f.close());

const apply = (obj: unknown) => f.objects.patch(structuredClone(obj) as any, undefined, undefined, 'krane', true, PatchStrategy.ServerSideApply);
const podsOf = async (app: string) => (await f.core.listNamespacedPod({ namespace: 'default', labelSelector: `app=${app}` })).items;
const ready = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const waiting = (p: V1Pod) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason;
const admin = (method: string, body?: unknown) => f.fetch(`${f.url}/_sim/gates`, { method, ...(body ? { body: JSON.stringify(body) } : {}) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

test('a held image keeps its pods ContainerCreating while others become Ready; the release starts them', async () => {
  f.sim.holdImage('app:held');
  await apply(deployment('gated', 'app:held', 2));
  await waitFor('the gated pods created', async () => (await podsOf('gated')).length === 2);
  await apply(deployment('free', 'app:free', 2));
  // The free pods, created after the gated ones with the same ready delay, get Ready: the
  // gated ones had every chance to.
  await waitFor('free pods ready', async () => {
    const p = await podsOf('free');
    return p.length === 2 && p.every(ready);
  });
  const held = await podsOf('gated');
  assert.equal(held.length, 2, 'the gated pods exist');
  for (const p of held) {
    assert.equal(ready(p), false, `${p.metadata!.name} not Ready`);
    assert.equal(waiting(p), 'ContainerCreating');
  }

  const r = f.sim.releaseImage('app:held');
  assert.equal(r.released, true);
  assert.deepEqual([...r.pods].sort(), held.map((p) => p.metadata!.name!).sort());
  await waitFor('gated pods ready after the release', async () => {
    const p = await podsOf('gated');
    return p.length === 2 && p.every(ready);
  });
  assert.equal(f.sim.releaseImage('app:held').released, false, 'a second release finds no gate');
});

test('the admin API holds, lists and releases a gate, and names a bad body', async () => {
  assert.deepEqual(await admin('POST', { image: 'app:api' }), { status: 200, body: { image: 'app:api', held: true } });
  assert.deepEqual((await admin('GET')).body, { images: ['app:api'], workloads: [] });
  await apply(deployment('via-api', 'app:api', 1));
  await waitFor('the pod created', async () => (await podsOf('via-api')).length === 1);
  const released = await admin('DELETE', { image: 'app:api' });
  assert.equal(released.status, 200);
  assert.equal(released.body.released, true);
  await waitFor('ready after the release', async () => {
    const p = await podsOf('via-api');
    return p.length === 1 && p.every(ready);
  });
  assert.deepEqual((await admin('GET')).body, { images: [], workloads: [] });
  for (const body of [{ image: 3 }, { namespace: 'default' }, { image: 'a', namespace: 'default', name: 'b' }, {}]) {
    const bad = await admin('POST', body);
    assert.equal(bad.status, 400, JSON.stringify(body));
    assert.match(bad.body.error, /image.*namespace, name/);
  }
});

test('a workload gate holds that workload\'s pods only, whatever their image', async () => {
  f.sim.holdWorkload('default', 'held-by-name');
  await apply(deployment('held-by-name', 'app:same', 1));
  await waitFor('the held pod created', async () => (await podsOf('held-by-name')).length === 1);
  await apply(deployment('same-image', 'app:same', 1));
  await waitFor('the other workload of the same image ready', async () => {
    const p = await podsOf('same-image');
    return p.length === 1 && p.every(ready);
  });
  const [held] = await podsOf('held-by-name');
  assert.equal(ready(held!), false);
  assert.equal(waiting(held!), 'ContainerCreating');
  assert.deepEqual(f.sim.gatesHeld(), { images: [], workloads: ['default/held-by-name'] });
  assert.equal(f.sim.releaseWorkload('default', 'held-by-name').released, true);
  await waitFor('ready after the release', async () => {
    const p = await podsOf('held-by-name');
    return p.length === 1 && p.every(ready);
  });
});
