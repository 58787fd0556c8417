// Table tests of the simulator's pure parts: selector parsing, patch semantics, field ownership.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matchLabels, parseFieldSelector, parseLabelSelector, matchFields } from '../../src/kube-sim/selectors';
import { jsonPatch, mergePatch, strategicMerge } from '../../src/kube-sim/merge';
import { fromFieldsV1, leafPaths, serverSideApply, toFieldsV1, ApplyConflict } from '../../src/kube-sim/fields';
import { intOrPercent } from '../../src/kube-sim/workloads/util';
import type { KubeObject } from '../../src/kube-sim/types';

test('label selector grammar', () => {
  const labels = { app: 'web', tier: 'front', 'app.kubernetes.io/managed-by': 'krane' };
  const cases: [string, boolean][] = [
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app!=web', false],
    ['app=web,tier=back', false],
    ['tier in (front, back)', true],
    ['tier notin (front)', false],
    ['missing notin (x)', true],
    ['missing in (x)', false],
    ['app.kubernetes.io/managed-by=krane', true],
    ['app.kubernetes.io/managed-by', true],
    ['!app.kubernetes.io/managed-by', false],
    ['!missing', true],
    ['missing!=x', true],
  ];
  for (const [sel, want] of cases) assert.equal(matchLabels(parseLabelSelector(sel), labels), want, sel);
  assert.throws(() => parseLabelSelector('a in b'), /unable to parse/);
  assert.throws(() => parseLabelSelector('a=b=c'), /unable to parse/);
});

test('field selectors: supported fields only, = and !=', () => {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns' }, status: { phase: 'Running' } } as KubeObject;
  assert.equal(matchFields(parseFieldSelector('status.phase=Running,metadata.name=p', 'Pod'), pod), true);
  assert.equal(matchFields(parseFieldSelector('status.phase!=Running', 'Pod'), pod), false);
  assert.throws(() => parseFieldSelector('status.phase=Running', 'Service'), /not supported/);
  assert.throws(() => parseFieldSelector('spec.replicas=1', 'Pod'), /not supported/);
});

test('merge patch, strategic merge patch and JSON patch', () => {
  const doc = { a: { b: 1, c: 2 }, list: [1, 2], containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'y' }] };
  assert.deepEqual(mergePatch(doc, { a: { b: null, d: 3 }, list: [3] }), { a: { c: 2, d: 3 }, list: [3], containers: doc.containers });
  const smp = strategicMerge(doc, { containers: [{ name: 'b', image: 'z' }, { name: 'c', image: 'w' }, { name: 'a', $patch: 'delete' }] }, true) as typeof doc;
  assert.deepEqual(smp.containers, [{ name: 'b', image: 'z' }, { name: 'c', image: 'w' }]);
  assert.deepEqual(jsonPatch(doc, [{ op: 'add', path: '/list/-', value: 9 }, { op: 'remove', path: '/a/b' }, { op: 'replace', path: '/containers/0/image', value: 'q' }]), {
    a: { c: 2 },
    list: [1, 2, 9],
    containers: [{ name: 'a', image: 'q' }, { name: 'b', image: 'y' }],
  });
  assert.throws(() => jsonPatch(doc, [{ op: 'test', path: '/a/b', value: 5 }]), /testing value/);
  // The input is never modified.
  assert.deepEqual(doc.a, { b: 1, c: 2 });
});

test('FieldsV1 round-trips field paths, with list items keyed and marked', () => {
  const obj = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 's', labels: { a: '1' } },
    spec: { ports: [{ port: 80, protocol: 'TCP', name: 'http' }, { port: 80, protocol: 'UDP', name: 'udp' }], selector: { app: 's' } },
  } as KubeObject;
  const paths = [...leafPaths(obj, 'main').keys()];
  const f = toFieldsV1(paths);
  const ports = (f['f:spec'] as any)['f:ports'];
  assert.deepEqual(Object.keys(ports).sort(), ['k:{"port":80,"protocol":"TCP"}', 'k:{"port":80,"protocol":"UDP"}']);
  assert.deepEqual(Object.keys(ports['k:{"port":80,"protocol":"TCP"}']).sort(), ['.', 'f:name', 'f:port', 'f:protocol']);
  assert.deepEqual([...fromFieldsV1(f)].sort(), [...paths].sort());
});

test('server-side apply: shared ownership for equal values, conflicts for different ones, removal only when unowned', () => {
  const base = (labels: Record<string, string>, replicas?: number) =>
    ({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'x', labels }, spec: replicas === undefined ? {} : { replicas } }) as KubeObject;
  const t = '2026-01-01T00:00:00Z';
  const a = serverSideApply(undefined, base({ a: '1', shared: 's' }, 1), 'one', false, t);
  const live = { ...a.object, metadata: { ...a.object.metadata, managedFields: a.managedFields } } as KubeObject;
  // Same value: no conflict, both own it.
  const b = serverSideApply(live, base({ shared: 's' }), 'two', false, t);
  const live2 = { ...b.object, metadata: { ...b.object.metadata, managedFields: b.managedFields } } as KubeObject;
  assert.equal(b.managedFields.length, 2);
  // Different value: conflict unless forced.
  assert.throws(() => serverSideApply(live2, base({}, 5), 'two', false, t), ApplyConflict);
  // 'one' stops applying `shared`: it stays, because 'two' still owns it; `a` goes.
  const c = serverSideApply(live2, base({}, 1), 'one', false, t);
  assert.deepEqual(c.object.metadata.labels, { shared: 's' });
  assert.equal(c.object.spec.replicas, 1);
});

test('server-side apply: a map applied empty, then with a key by the same manager, keeps the key', () => {
  const ns = (labels: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n', labels } }) as KubeObject;
  const t = '2026-01-01T00:00:00Z';
  const a = serverSideApply(undefined, ns({}), 'one', false, t);
  const live = { ...a.object, metadata: { ...a.object.metadata, managedFields: a.managedFields } } as KubeObject;
  // The empty map's own path was owned; the key under it replaces it, it does not remove it.
  const b = serverSideApply(live, ns({ team: 'a' }), 'one', false, t);
  assert.deepEqual(b.object.metadata.labels, { team: 'a' });
  const live2 = { ...b.object, metadata: { ...b.object.metadata, managedFields: b.managedFields } } as KubeObject;
  // And back: applying the empty map again removes the key the manager no longer applies.
  const c = serverSideApply(live2, ns({}), 'one', false, t);
  assert.deepEqual(c.object.metadata.labels ?? {}, {});
});

test('int-or-percent rounding like the deployment controller', () => {
  assert.equal(intOrPercent('25%', 3, true), 1);
  assert.equal(intOrPercent('25%', 3, false), 0);
  assert.equal(intOrPercent(2, 3, true), 2);
  assert.equal(intOrPercent('50%', 5, true), 3);
});
