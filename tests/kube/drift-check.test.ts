// driftReason: what counts as drift of a managed object (src/kube/drift-check.ts), table-tested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyDigest, driftReason, firstDifference, ownedContent, replicaFloors } from '../../src/kube/drift-check';
import { objectKey } from '../../src/kube/manifests/types';
import type { ManifestObject } from '../../src/kube/manifests';

const svc: ManifestObject = {
  apiVersion: 'v1', kind: 'Service',
  metadata: { name: 's', namespace: 'unkey', labels: { a: '1', 'app.kubernetes.io/managed-by': 'krane' }, annotations: { h: 'x' } },
  spec: { clusterIP: 'None', publishNotReadyAddresses: true, ports: [{ name: 'http', port: 80, targetPort: 80, protocol: 'TCP' }] },
};
const live = (over: Record<string, any> = {}) => ({
  apiVersion: 'v1', kind: 'Service',
  metadata: { name: 's', namespace: 'unkey', labels: { a: '1', 'app.kubernetes.io/managed-by': 'krane', extra: 'y' }, annotations: { h: 'x', other: 'z' }, ...over.metadata },
  spec: { clusterIP: 'None', clusterIPs: ['None'], type: 'ClusterIP', sessionAffinity: 'None', publishNotReadyAddresses: true, ports: [{ name: 'http', port: 80, targetPort: 80, protocol: 'TCP' }], ...over.spec },
  status: { loadBalancer: {} },
});

test('without a generation: fields added by the server are no drift, a changed or missing value is', () => {
  const cases: [string, any, string | undefined][] = [
    ['identical plus server defaults', live(), undefined],
    ['a label krane set removed', live({ metadata: { labels: { 'app.kubernetes.io/managed-by': 'krane' } } }), 'label a'],
    ['a label krane set changed', live({ metadata: { labels: { a: '2', 'app.kubernetes.io/managed-by': 'krane' } } }), 'label a'],
    ['an annotation krane set removed', live({ metadata: { annotations: {} } }), 'annotation h'],
    ['a spec value changed', live({ spec: { publishNotReadyAddresses: false } }), 'spec.publishNotReadyAddresses'],
    ['a port added', live({ spec: { ports: [{ name: 'http', port: 80, targetPort: 80, protocol: 'TCP' }, { name: 'x', port: 81 }] } }), 'spec.ports'],
    ['a port changed', live({ spec: { ports: [{ name: 'http', port: 81, targetPort: 80, protocol: 'TCP' }] } }), 'spec.ports[0].port'],
  ];
  for (const [name, obj, want] of cases) assert.equal(driftReason({ desired: svc, generation: undefined }, obj), want, name);
});

test('with a generation: krane\'s labels and annotations, its replicas, and the body once the generation moved', () => {
  const sts: ManifestObject = { ...svc, apiVersion: 'apps/v1', kind: 'StatefulSet', spec: { replicas: 2, template: { image: 'a' } } };
  // What the server left after krane's apply: defaults added.
  const served = (generation: number, spec: Record<string, unknown>) => ({ ...live(), spec: { podManagementPolicy: 'Parallel', ...spec }, metadata: { ...live().metadata, generation } });
  const applied = { desired: sts, generation: 3, digest: bodyDigest(served(3, { replicas: 2, template: { image: 'a' } })) };
  const cases: [string, any, string | undefined][] = [
    ['as applied', served(3, { replicas: 2, template: { image: 'a' } }), undefined],
    ['replicas changed (kubectl scale)', served(4, { replicas: 5, template: { image: 'a' } }), 'spec.replicas'],
    ['the template changed', served(4, { replicas: 2, template: { image: 'b' } }), 'spec (generation moved)'],
    ['changed and changed back', served(5, { replicas: 2, template: { image: 'a' } }), undefined],
    ['a label removed', { ...served(3, { replicas: 2, template: { image: 'a' } }), metadata: { ...served(3, {}).metadata, labels: {} } }, 'label a'],
  ];
  for (const [name, obj, want] of cases) assert.equal(driftReason(applied, obj), want, name);
});

test('an autoscaled workload: its autoscaler\'s scale is no drift, a count below its minimum is', () => {
  // The manifest leaves replicas out: the autoscaler owns them.
  const sts: ManifestObject = { ...svc, apiVersion: 'apps/v1', kind: 'StatefulSet', spec: { template: { image: 'a' } } };
  const served = (generation: number, spec: Record<string, unknown>) => ({ ...live(), spec, metadata: { ...live().metadata, generation } });
  const applied = { desired: sts, generation: 1, digest: bodyDigest(served(1, { replicas: 1, template: { image: 'a' } })), replicasFloor: 2 };
  const cases: [string, any, string | undefined][] = [
    ['the autoscaler scaled up', served(2, { replicas: 4, template: { image: 'a' } }), undefined],
    ['down to its minimum', served(3, { replicas: 2, template: { image: 'a' } }), undefined],
    ['scaled to 0', served(4, { replicas: 0, template: { image: 'a' } }), "spec.replicas below the autoscaler's minimum"],
    ['below its minimum', served(4, { replicas: 1, template: { image: 'a' } }), "spec.replicas below the autoscaler's minimum"],
    ['the image set while scaled', served(5, { replicas: 4, template: { image: 'b' } }), 'spec (generation moved)'],
  ];
  for (const [name, obj, want] of cases) assert.equal(driftReason(applied, obj), want, name);
});

test('owned content: what another manager or the autoscaler changes is not krane\'s; what krane sets is', () => {
  const sts: ManifestObject = { ...svc, apiVersion: 'apps/v1', kind: 'StatefulSet', spec: { template: { image: 'a' } } };
  const base = { ...live(), spec: { replicas: 1, template: { image: 'a' } } };
  const same = (o: any) => ownedContent(sts, base) === ownedContent(sts, o);
  assert.ok(same({ ...base, spec: { ...base.spec, replicas: 3 } }), 'replicas krane does not set');
  assert.ok(same({ ...base, metadata: { ...base.metadata, labels: { ...base.metadata.labels, other: 'x' }, annotations: { ...base.metadata.annotations, 'deployment.kubernetes.io/revision': '2' } } }), 'labels and annotations of others');
  assert.ok(!same({ ...base, metadata: { ...base.metadata, labels: { 'app.kubernetes.io/managed-by': 'krane' } } }), 'a label of krane\'s');
  assert.ok(!same({ ...base, spec: { ...base.spec, template: { image: 'b' } } }), 'the body');
});

test('replica floors: the target of each autoscaler among the objects, at its minReplicas', () => {
  const hpa: ManifestObject = { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'd', namespace: 'unkey', labels: {}, annotations: {} }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'd' }, minReplicas: 3 } };
  const floors = replicaFloors([svc, hpa], objectKey);
  assert.deepEqual([...floors], [['apps/v1/StatefulSet/unkey/d', 3]]);
});

test('firstDifference names the path and never a value', () => {
  assert.equal(firstDifference({ data: { k: 'secret-value' } }, { data: { k: 'other' } }, 'x'), 'x.data.k');
  assert.equal(firstDifference([1, 2], [1, 2], 'l'), undefined);
  assert.equal(firstDifference({ a: 1 }, null, 'o'), 'o');
});
