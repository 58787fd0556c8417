// driftReason: what counts as drift of a managed object (src/kube/drift-check.ts), table-tested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { driftReason, firstDifference } from '../../src/kube/drift-check';
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
  for (const [name, obj, want] of cases) assert.equal(driftReason(svc, undefined, obj), want, name);
});

test('with a generation: only the generation and krane labels and annotations count', () => {
  const sts: ManifestObject = { ...svc, apiVersion: 'apps/v1', kind: 'StatefulSet', spec: { replicas: 2 } };
  const at = (generation: number, spec = { replicas: 2 }) => ({ ...live(), spec, metadata: { ...live().metadata, generation } });
  assert.equal(driftReason(sts, 3, at(3)), undefined);
  assert.equal(driftReason(sts, 3, at(3, { replicas: 5 })), undefined, 'the spec itself is not compared: the server defaults it');
  assert.equal(driftReason(sts, 3, at(4)), 'spec (generation moved)');
  assert.equal(driftReason(sts, 3, { ...at(3), metadata: { ...at(3).metadata, labels: {} } }), 'label a');
});

test('firstDifference names the path and never a value', () => {
  assert.equal(firstDifference({ data: { k: 'secret-value' } }, { data: { k: 'other' } }, 'x'), 'x.data.k');
  assert.equal(firstDifference([1, 2], [1, 2], 'l'), undefined);
  assert.equal(firstDifference({ a: 1 }, null, 'o'), 'o');
});
