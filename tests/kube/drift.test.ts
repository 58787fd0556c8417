import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DriftWatch } from '../../src/kube/drift';
import type { ResourceRef } from '../../src/sync/wire';
import { controller, logger, startSim, until } from './helpers';
import { deploymentState } from './fixtures';

const { sim, api } = await startSim(20);
const ctl = controller(api);
const drift = new DriftWatch({ api, controller: ctl, logger, relistIntervalMs: 60_000 });
drift.start();
after(async () => {
  ctl.close();
  await drift.stop();
});
await until(() => drift.hasSynced);

const ref = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });

let markers = 0;
/**
 * Positive evidence that nothing more is coming, instead of a sleep: a managed marker
 * StatefulSet written now is seen by the drift watch of StatefulSets only after every earlier
 * event of that watch; any repair those events asked for was scheduled by then, so once no
 * repair is pending, none will happen.
 */
async function settled(): Promise<void> {
  const name = `marker-${++markers}`;
  await api.objects.create({
    apiVersion: 'apps/v1', kind: 'StatefulSet',
    metadata: { name, namespace: 'unkey', labels: { 'app.kubernetes.io/managed-by': 'krane', marker: name } },
    spec: { replicas: 0, serviceName: name, selector: { matchLabels: { marker: name } }, template: { metadata: { labels: { marker: name } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
  } as any);
  const watch = drift.reflectors['StatefulSet/unkey']!;
  await until(() => [...watch.store.values()].some((o) => o.metadata?.name === name));
  await until(() => ctl.repairsPending === 0);
}
const sts = (name: string) => api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name }) as Promise<any>;

test('a StatefulSet deleted by hand is re-created; a hand scale is reverted', async () => {
  await ctl.apply(ref('dep-drift'), deploymentState({ deploymentId: 'dep-drift', replicas: 2 }));
  const first = await sts('dep-drift');
  await api.delete({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name: 'dep-drift' });
  const again = await until(async () => {
    const s = await sts('dep-drift');
    return s && s.metadata.uid !== first.metadata.uid ? s : undefined;
  }, 5000);
  assert.equal(again.spec.replicas, 2);
  assert.ok(ctl.stats.repaired >= 1);

  await api.objects.patch(
    { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'dep-drift', namespace: 'unkey' }, spec: { replicas: 5 } } as any,
    undefined, undefined, 'kubectl', undefined, 'application/merge-patch+json',
  );
  await until(async () => (await sts('dep-drift')).spec.replicas === 2, 5000);
});

test('steady state: pods coming and going cause no writes; a deleted resource stays deleted', async () => {
  await ctl.apply(ref('dep-calm'), deploymentState({ deploymentId: 'dep-calm', replicas: 3 }));
  await until(async () => (await sts('dep-calm'))?.status?.readyReplicas === 3, 5000);
  const before = { ...ctl.stats };
  await settled();
  assert.deepEqual([ctl.stats.applied, ctl.stats.repaired], [before.applied, before.repaired], 'no writes while pods came up');

  await ctl.delete(ref('dep-calm'));
  await settled();
  assert.equal(await sts('dep-calm'), undefined);
  assert.equal(ctl.stats.repaired, before.repaired);
});

test('a delete queued behind an apply of the same resource wins, and drift repair does not undo it', async () => {
  const applying = ctl.apply(ref('dep-race'), deploymentState({ deploymentId: 'dep-race', replicas: 1 }));
  const deleting = ctl.delete(ref('dep-race'));
  await Promise.all([applying, deleting]);
  await settled();
  assert.equal(await sts('dep-race'), undefined);
  assert.equal(await api.get({ apiVersion: 'v1', kind: 'Service', namespace: 'unkey', name: 'dep-race' }), undefined);
});

test('gc of a resource is not undone by drift repair', async () => {
  await ctl.apply(ref('dep-gcd'), deploymentState({ deploymentId: 'dep-gcd', replicas: 1 }));
  await ctl.gc(new Set(['deployment_topology/dep-drift']));
  await settled();
  assert.equal(await sts('dep-gcd'), undefined);
  assert.ok(await sts('dep-drift'));
});
