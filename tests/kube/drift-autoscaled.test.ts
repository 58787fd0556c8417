// Drift of an autoscaled deployment (issue 33, defect 7). The StatefulSet's replicas belong to
// its HorizontalPodAutoscaler: the autoscaler scaling it is no drift (no repair counted, nothing
// re-applied), while anything that takes it below the autoscaler's minReplicas (`kubectl scale
// --replicas=0`, from which an HPA never scales back) is put back to minReplicas. The autoscaler
// here is kube-sim's own controller, driven one sync at a time (syncNow), so every order is
// made, not waited for; operators' edits are the real kubectl.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { KubeSim, DEFAULT_SIM_OPTIONS } from '../../src/kube-sim';
import { KubeClient } from '../../src/kube/client';
import { DriftWatch } from '../../src/kube/drift';
import type { ResourceRef } from '../../src/sync/wire';
import { controller, logger, until } from './helpers';
import { deploymentState } from './fixtures';
import { kubectlFor } from './kubectl';

// The autoscaler runs only when the test says (syncNow): its timer is pushed out of the way.
const sim = new KubeSim({ readyDelayMs: 20, minReadyScale: 0.01, hpaSyncMs: 3_600_000, namespaces: [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'] });
await sim.listen(0);
after(() => sim.close());
const api = new KubeClient(sim.kubeConfig());
const ctl = controller(api);
const drift = new DriftWatch({ api, controller: ctl, logger, relistIntervalMs: 60_000 });
drift.start();
after(async () => {
  ctl.close();
  await drift.stop();
});
await until(() => drift.hasSynced);
const kubectl = kubectlFor(sim.url);

const ref = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });
const sts = (name: string) => api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name }) as Promise<any>;
const autoscaled = (id: string, image = 'registry.example/app:cpuhot-v1') =>
  deploymentState({ deploymentId: id, image, replicas: 2, autoscaling: { minReplicas: 2, maxReplicas: 5, cpuUtilization: 50 } });

let markers = 0;
/**
 * Positive evidence that nothing more is coming (tests/kube/drift.test.ts): a marker seen by
 * the StatefulSet watch comes after every earlier event of it, so once no repair is pending
 * after it, none will be made for those events.
 */
async function settled(): Promise<void> {
  const name = `marker-${++markers}`;
  await api.objects.create({
    apiVersion: 'apps/v1', kind: 'StatefulSet',
    metadata: { name, namespace: 'unkey', labels: { 'app.kubernetes.io/managed-by': 'krane', marker: name } },
    spec: { replicas: 0, serviceName: name, selector: { matchLabels: { marker: name } }, template: { metadata: { labels: { marker: name } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
  } as any);
  await until(() => [...drift.reflectors['StatefulSet/unkey']!.store.values()].some((o) => o.metadata?.name === name));
  await until(() => ctl.repairsPending === 0);
}

/** All of the StatefulSet's pods Ready, so the autoscaler has CPU figures to act on. krane
 *  created it at the autoscaler's minimum (2), not at the API server's default of 1. */
const allReady = (name: string, n: number) => until(async () => (await sts(name))?.status?.readyReplicas === n, 10_000);

test('the autoscaler scaling an autoscaled StatefulSet up is no drift: nothing re-applied, no repair counted', async () => {
  await ctl.apply(ref('dep-hpa-up'), autoscaled('dep-hpa-up'));
  await allReady('dep-hpa-up', 2);
  await settled();
  const before = { applied: ctl.stats.applied, repaired: ctl.stats.repaired, drift: ctl.drift.snapshot().repaired };
  sim.autoscalers.syncNow();
  // cpuhot runs at 95% of its request against a 50% target: the autoscaler wants more pods.
  const scaled = (await sts('dep-hpa-up')).spec.replicas;
  assert.ok(scaled > 2, `the autoscaler scaled the StatefulSet past its minimum (replicas ${scaled})`);
  await settled();
  assert.deepEqual(
    { applied: ctl.stats.applied, repaired: ctl.stats.repaired, drift: ctl.drift.snapshot().repaired },
    before,
    'the autoscaler\'s scale is not drift',
  );
  assert.equal((await sts('dep-hpa-up')).spec.replicas, scaled, 'krane left the autoscaler\'s count alone');
});

test('kubectl scale --replicas=0 of an autoscaled StatefulSet is put back to minReplicas, and counted once', async () => {
  await ctl.apply(ref('dep-hpa-zero'), autoscaled('dep-hpa-zero', 'registry.example/app:v1'));
  await settled();
  const repaired = ctl.drift.snapshot().repaired;
  await kubectl.ok(['scale', 'statefulset', 'dep-hpa-zero', '-n', 'unkey', '--replicas=0']);
  await until(async () => (await sts('dep-hpa-zero')).spec.replicas === 2, 10_000);
  await settled();
  assert.equal(ctl.drift.snapshot().repaired, repaired + 1, 'one object put back');
  // An autoscaler does not scale up from 0; krane's floor is what brought it back.
  assert.equal((await sts('dep-hpa-zero')).spec.replicas, 2);
});

test('a scale below minReplicas but above 0 is put back too; one within the bounds is left to the autoscaler', async () => {
  await ctl.apply(ref('dep-hpa-low'), autoscaled('dep-hpa-low', 'registry.example/app:v1'));
  await settled();
  await kubectl.ok(['scale', 'statefulset', 'dep-hpa-low', '-n', 'unkey', '--replicas=1']);
  await until(async () => (await sts('dep-hpa-low')).spec.replicas === 2, 10_000);
  await settled();
  const repaired = ctl.drift.snapshot().repaired;
  await kubectl.ok(['scale', 'statefulset', 'dep-hpa-low', '-n', 'unkey', '--replicas=4']);
  await settled();
  assert.equal((await sts('dep-hpa-low')).spec.replicas, 4, 'within [min, max] the count is the autoscaler\'s business');
  assert.equal(ctl.drift.snapshot().repaired, repaired, 'and no repair is counted');
});

test('a change to what krane owns in an autoscaled StatefulSet is still repaired, keeping the autoscaler\'s count', async () => {
  await ctl.apply(ref('dep-hpa-img'), autoscaled('dep-hpa-img'));
  await allReady('dep-hpa-img', 2);
  sim.autoscalers.syncNow();
  const scaled = (await sts('dep-hpa-img')).spec.replicas;
  assert.ok(scaled > 2);
  await settled();
  const repaired = ctl.drift.snapshot().repaired;
  await kubectl.ok(['set', 'image', 'statefulset/dep-hpa-img', 'app=evil.example/app:v9', '-n', 'unkey']);
  await until(async () => (await sts('dep-hpa-img')).spec.template.spec.containers[0].image === 'registry.example/app:cpuhot-v1', 10_000);
  await settled();
  assert.equal(ctl.drift.snapshot().repaired, repaired + 1);
  assert.equal((await sts('dep-hpa-img')).spec.replicas, scaled, 'the repair did not reset the autoscaler\'s count');
});
