import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pause } from '../helpers/wait';
import { PermanentError } from '../../src/sync/wire';
import { refKey, type ResourceRef } from '../../src/sync/wire';
import { managedKinds } from '../../src/kube/apply-controller';
import type { KubeApplyError } from '../../src/kube/errors';
import { Inventory } from '../../src/kube/inventory';
import { Reflector } from '../../src/kube/reflector';
import { isKindUnavailable, KubeClient } from '../../src/kube/client';
import { KubeSim } from '../../src/kube-sim';
import { ANNOTATION } from '../../src/kube/manifests';
import { controller, logger, startSim, until } from './helpers';
import { deploymentState, policyState, sentinelState } from './fixtures';

const { sim, api } = await startSim();
const stats = () => sim.stats.snapshot();
const resetStats = () => sim.stats.reset();

const depRef = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });
const sntRef = (id: string): ResourceRef => ({ type: 'sentinel', id, region: 'us-east-1' });
const cnpRef = (id: string): ResourceRef => ({ type: 'cilium_network_policy', id, region: 'us-east-1' });

async function names(apiVersion: string, kind: string, ns: string): Promise<string[]> {
  return (await api.list(apiVersion, kind, ns)).items.map((o) => o.metadata!.name!).sort();
}

test('apply creates the objects; applying the same state again makes no writes, also after a restart', async () => {
  const ctl = controller(api);
  await ctl.apply(depRef('dep-idem'), deploymentState({ deploymentId: 'dep-idem' }));
  await ctl.apply(sntRef('snt-idem'), sentinelState({ sentinelId: 'snt-idem', environmentId: 'env-idem' }));
  await ctl.apply(cnpRef('cnp-idem'), policyState({ policyId: 'cnp-idem', environmentId: 'env-idem' }));
  assert.ok((await names('apps/v1', 'StatefulSet', 'unkey')).includes('dep-idem'));
  assert.ok((await names('apps/v1', 'Deployment', 'sentinel')).includes('snt-idem'));
  assert.ok((await names('cilium.io/v2', 'CiliumNetworkPolicy', 'sentinel')).includes('gossip-env-idem'));

  resetStats();
  await ctl.apply(depRef('dep-idem'), deploymentState({ deploymentId: 'dep-idem' }));
  await ctl.apply(sntRef('snt-idem'), sentinelState({ sentinelId: 'snt-idem', environmentId: 'env-idem' }));
  await ctl.apply(cnpRef('cnp-idem'), policyState({ policyId: 'cnp-idem', environmentId: 'env-idem' }));
  assert.equal(stats().writes, 0, JSON.stringify(stats().byVerb));
  assert.equal(stats().requests, 0);

  // a restarted krane has no memory: it verifies by listing, and still writes nothing
  const fresh = controller(api);
  resetStats();
  await fresh.apply(depRef('dep-idem'), deploymentState({ deploymentId: 'dep-idem' }));
  await fresh.apply(sntRef('snt-idem'), sentinelState({ sentinelId: 'snt-idem', environmentId: 'env-idem' }));
  const s = stats();
  assert.equal(s.writes, 0, JSON.stringify(s.byVerb));
  assert.ok(s.byVerb.list > 0);
});

test('a changed state is applied; drift by another manager is repaired after re-verification', async () => {
  const ctl = controller(api);
  await ctl.apply(depRef('dep-chg'), deploymentState({ deploymentId: 'dep-chg', replicas: 1 }));
  resetStats();
  await ctl.apply(depRef('dep-chg'), deploymentState({ deploymentId: 'dep-chg', replicas: 3 }));
  assert.ok(stats().mutations >= 1);
  const sts = (await api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name: 'dep-chg' })) as any;
  assert.equal(sts.spec.replicas, 3);

  // someone scales it by hand
  await api.objects.patch(
    { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'dep-chg', namespace: 'unkey' }, spec: { replicas: 7 } } as any,
    undefined, undefined, 'kubectl', undefined, 'application/merge-patch+json',
  );
  ctl.inventory.invalidate(); // as at the next resync
  await ctl.apply(depRef('dep-chg'), deploymentState({ deploymentId: 'dep-chg', replicas: 3 }));
  const after = (await api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name: 'dep-chg' })) as any;
  assert.equal(after.spec.replicas, 3);
});

test('an existing object without the managed-by label is never taken over', async () => {
  await api.objects.create({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'dep-theirs', namespace: 'unkey', labels: { app: 'theirs' } },
    spec: { selector: { app: 'theirs' }, ports: [{ port: 80 }] },
  } as any);
  const ctl = controller(api);
  await assert.rejects(ctl.apply(depRef('dep-theirs'), deploymentState({ deploymentId: 'dep-theirs' })), (err: unknown) => {
    assert.ok(err instanceof PermanentError);
    assert.equal((err as KubeApplyError).code, 'ERR_KUBE_UNMANAGED_CONFLICT');
    return true;
  });
  const svc = (await api.get({ apiVersion: 'v1', kind: 'Service', namespace: 'unkey', name: 'dep-theirs' })) as any;
  assert.deepEqual(svc.metadata.labels, { app: 'theirs' });
  assert.equal(svc.metadata.annotations?.[ANNOTATION.manifestHash], undefined);
  // delete of that resource leaves the foreign object alone too
  await ctl.delete(depRef('dep-theirs'));
  assert.ok(await api.get({ apiVersion: 'v1', kind: 'Service', namespace: 'unkey', name: 'dep-theirs' }));
});

test('a change to an immutable StatefulSet field is applied by deleting and recreating the object', async () => {
  // A managed StatefulSet whose immutable selector and serviceName differ from what krane
  // would send (as after a krane upgrade that changed them): the API server answers 422.
  const old = await api.objects.create({
    apiVersion: 'apps/v1', kind: 'StatefulSet',
    metadata: { name: 'dep-immut', namespace: 'unkey', labels: { 'app.kubernetes.io/managed-by': 'krane', x: 'y' } },
    spec: {
      serviceName: 'elsewhere', selector: { matchLabels: { x: 'y' } }, replicas: 1,
      template: { metadata: { labels: { x: 'y' } }, spec: { containers: [{ name: 'app', image: 'old' }] } },
    },
  } as any);
  const recreated: string[] = [];
  const ctl = controller(api, 60_000, { onRecreated: (_ref, why) => recreated.push(why) });
  await ctl.apply(depRef('dep-immut'), deploymentState({ deploymentId: 'dep-immut', replicas: 1 }));
  const live = (await api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name: 'dep-immut' })) as any;
  assert.notEqual(live.metadata.uid, old.metadata!.uid, 'a new incarnation');
  assert.equal(live.spec.serviceName, 'dep-immut');
  assert.equal(ctl.stats.recreated, 1);
  assert.equal(recreated.length, 1);
  assert.match(recreated[0]!, /is invalid/);
  // The pods come back under the new object.
  await until(async () => (await api.list('v1', 'Pod', 'unkey')).items.some((p: any) => p.metadata.name === 'dep-immut-0' && p.metadata.ownerReferences?.[0]?.uid === live.metadata.uid));
});

test('a change to an immutable Deployment field (a sentinel\'s selector) is applied by deleting and recreating it', async () => {
  await api.objects.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'sentinel' } } as any).catch(() => {});
  const old = await api.objects.create({
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: 'snt-immut', namespace: 'sentinel', labels: { 'app.kubernetes.io/managed-by': 'krane', x: 'y' } },
    spec: { selector: { matchLabels: { x: 'y' } }, replicas: 1, template: { metadata: { labels: { x: 'y' } }, spec: { containers: [{ name: 'sentinel', image: 'old' }] } } },
  } as any);
  const recreated: string[] = [];
  const ctl = controller(api, 60_000, { onRecreated: (_ref, why) => recreated.push(why) });
  await ctl.apply(sntRef('snt-immut'), sentinelState({ sentinelId: 'snt-immut', environmentId: 'env-immut' }));
  const live = (await api.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'sentinel', name: 'snt-immut' })) as any;
  assert.notEqual(live.metadata.uid, old.metadata!.uid, 'a new incarnation');
  assert.notDeepEqual(live.spec.selector, { matchLabels: { x: 'y' } });
  assert.equal(ctl.stats.recreated, 1);
  assert.match(recreated[0]!, /field is immutable/);
  // The pods come back under the new object.
  await until(async () => (await api.list('v1', 'Pod', 'sentinel')).items.some((p: any) => p.metadata.ownerReferences?.[0]?.uid === live.metadata.uid));
});

test('delete removes a resource\'s objects and is idempotent', async () => {
  const ctl = controller(api);
  await ctl.apply(sntRef('snt-del'), sentinelState({ sentinelId: 'snt-del', environmentId: 'env-del' }));
  assert.ok((await names('policy/v1', 'PodDisruptionBudget', 'sentinel')).includes('snt-del'));
  await ctl.delete(sntRef('snt-del'));
  for (const [v, k] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']] as const) {
    assert.ok(!(await names(v, k, 'sentinel')).includes('snt-del'), k);
  }
  await ctl.delete(sntRef('snt-del'));
  // a restarted krane (empty inventory) finds objects by their deterministic names too
  await ctl.apply(depRef('dep-del'), deploymentState({ deploymentId: 'dep-del' }));
  await controller(api).delete(depRef('dep-del'));
  assert.ok(!(await names('apps/v1', 'StatefulSet', 'unkey')).includes('dep-del'));
});

test('gc after a full snapshot deletes exactly the managed objects not mentioned, never unlabelled ones', async () => {
  const ctl = controller(api);
  const keep = ['dep-gc-keep1', 'dep-gc-keep2'];
  const drop = ['dep-gc-drop1', 'dep-gc-drop2'];
  for (const id of [...keep, ...drop]) await ctl.apply(depRef(id), deploymentState({ deploymentId: id, replicas: 1 }));
  await ctl.apply(sntRef('snt-gc'), sentinelState({ sentinelId: 'snt-gc', environmentId: 'env-gc' }));
  await ctl.apply(cnpRef('cnp-gc'), policyState({ policyId: 'cnp-gc', environmentId: 'env-gc' }));
  await api.objects.create({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'stray', namespace: 'unkey' }, spec: { selector: { a: 'b' }, ports: [{ port: 80 }] },
  } as any);
  await api.objects.create({
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dep-gc-drop1', namespace: 'unkey', labels: { [ANNOTATION.resource]: 'x' } }, data: {},
  } as any);

  const everything = async () => ({
    sts: await names('apps/v1', 'StatefulSet', 'unkey'),
    svcU: await names('v1', 'Service', 'unkey'),
    dep: await names('apps/v1', 'Deployment', 'sentinel'),
    svcS: await names('v1', 'Service', 'sentinel'),
    pdb: await names('policy/v1', 'PodDisruptionBudget', 'sentinel'),
    cnp: await names('cilium.io/v2', 'CiliumNetworkPolicy', 'sentinel'),
  });
  const before = await everything();
  // Every resource that exists now stays desired except this test's drops and its sentinel, so
  // the test does not depend on which other tests ran before it (or alone).
  await ctl.inventory.ensureFresh(true);
  const undesired = new Set([...drop.map((id) => refKey(depRef(id))), refKey(sntRef('snt-gc'))]);
  const desired = new Set(ctl.inventory.all().map((e) => e.resource).filter((r): r is string => !!r && !undesired.has(r)));
  for (const id of keep) assert.ok(desired.has(refKey(depRef(id))), `${id} is desired`);
  resetStats();
  await ctl.gc(desired);
  const afterGc = await everything();
  const gone = (k: keyof typeof before) => before[k].filter((n) => !afterGc[k].includes(n));
  assert.deepEqual(gone('sts'), drop);
  assert.deepEqual(gone('svcU'), drop);
  assert.deepEqual(gone('dep'), ['snt-gc']);
  assert.deepEqual(gone('svcS'), ['snt-gc']);
  assert.deepEqual(gone('pdb'), ['snt-gc']);
  assert.deepEqual(gone('cnp'), []);
  assert.ok(afterGc.svcU.includes('stray'), 'an unlabelled Service stays');
  assert.equal(stats().byVerb.delete, 7);
  // pods of the dropped StatefulSets go with them (background propagation)
  const pods = (await api.list('v1', 'Pod', 'unkey')).items.map((p) => p.metadata!.name!);
  assert.ok(!pods.some((p) => p.startsWith('dep-gc-drop')), pods.join(','));
  // a second gc with the same set deletes nothing
  resetStats();
  await ctl.gc(desired);
  assert.equal(stats().byVerb.delete, 0);
});

test('once the inventory is older than verifyAfterMs, apply verifies again and repairs a hand-deleted object', async () => {
  const ctl = controller(api, 50);
  await ctl.apply(depRef('dep-verify'), deploymentState({ deploymentId: 'dep-verify', replicas: 1 }));
  await api.delete({ apiVersion: 'v1', kind: 'Service', namespace: 'unkey', name: 'dep-verify' });
  // Past verifyAfterMs (50): the inventory's age is wall-clock time, so the clock has to move.
  await pause(60);
  resetStats();
  await ctl.apply(depRef('dep-verify'), deploymentState({ deploymentId: 'dep-verify', replicas: 1 }));
  assert.ok(await api.get({ apiVersion: 'v1', kind: 'Service', namespace: 'unkey', name: 'dep-verify' }));
  assert.equal(stats().mutations, 1, JSON.stringify(stats().byVerb));
});

test('a desired state for another region or namespace is refused before any request', async () => {
  const ctl = controller(api);
  resetStats();
  await assert.rejects(ctl.apply({ ...depRef('dep-x'), region: 'eu-west-1' }, deploymentState({ deploymentId: 'dep-x', region: 'eu-west-1' })), (e: unknown) => (e as KubeApplyError).code === 'ERR_KUBE_WRONG_REGION');
  await assert.rejects(ctl.apply(depRef('dep-x'), deploymentState({ deploymentId: 'dep-x', namespace: 'default' })), (e: unknown) => (e as KubeApplyError).code === 'ERR_KUBE_WRONG_NAMESPACE');
  assert.equal(stats().requests, 0);
});

test('a kind the cluster does not serve (no CRD) neither blocks the inventory nor the watches', async () => {
  const widget = { apiVersion: 'example.io/v1', kind: 'Widget', namespace: 'unkey' };
  const inv = new Inventory(api, [widget, ...managedKinds()], 60_000);
  await inv.ensureFresh();
  assert.ok(inv.all().length > 0);
  const err = await api.apply({ apiVersion: 'example.io/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'unkey' } }).then(() => undefined, (e: unknown) => e);
  assert.ok(isKindUnavailable(err), String(err));
  const r = new Reflector({ api, ...widget, plural: 'widgets', labelSelector: '', logger, relistIntervalMs: 60_000, onEvent: () => {} });
  r.start();
  try {
    await until(() => r.hasSynced, { what: 'the reflector synced with the kind unavailable' });
  } finally {
    await r.stop();
  }
});

test('a missing namespace is a permanent failure of that resource, coded, naming the namespace', async () => {
  const bare = new KubeSim({ readyDelayMs: 10 });
  await bare.listen(0);
  try {
    const ctl = controller(new KubeClient(bare.kubeConfig()));
    await assert.rejects(ctl.apply(depRef('dep-nons'), deploymentState({ deploymentId: 'dep-nons' })), (err: unknown) => {
      // Permanent: the operator creates namespaces (deploy/krane-rbac.yaml); waiting on it would
      // stall the whole region behind one resource.
      assert.ok(err instanceof PermanentError);
      assert.equal((err as KubeApplyError).code, 'ERR_KUBE_NAMESPACE_MISSING');
      assert.match((err as Error).message, /namespaces "unkey" not found/);
      return true;
    });
  } finally {
    await bare.close();
  }
});
