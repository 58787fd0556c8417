// The inventory's index of objects by resource (src/kube/inventory.ts): byResource answers from
// it, so every way an entry comes, changes resource or goes must keep it right. A wrong index
// would make an apply delete another resource's objects as stale, or keep its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../../src/kube/client';
import { Inventory } from '../../src/kube/inventory';
import { ANNOTATION, LABEL } from '../../src/kube/manifests';
import { objectKey } from '../../src/kube/manifests/types';

const obj = (kind: string, name: string, resource?: string) => ({
  apiVersion: 'v1',
  kind,
  metadata: {
    namespace: 'sentinel',
    name,
    labels: { [LABEL.managedBy]: 'krane' },
    annotations: (resource ? { [ANNOTATION.resource]: resource } : {}) as Record<string, string>,
  },
});
const names = (inv: Inventory, resource: string) => inv.byResource(resource).map((e) => `${e.kind}/${e.name}`).sort();

test('byResource follows sets, resource changes, forgets and removes', () => {
  // Only set/remove/forget are exercised: no list, so the client is never called.
  const inv = new Inventory({} as KubeClient, [], 60_000);
  inv.set(obj('Service', 'a', 'sentinel/s1'));
  inv.set(obj('ConfigMap', 'a', 'sentinel/s1'));
  inv.set(obj('Service', 'b', 'sentinel/s2'));
  inv.set(obj('Service', 'c'));
  assert.deepEqual(names(inv, 'sentinel/s1'), ['ConfigMap/a', 'Service/a']);
  assert.deepEqual(names(inv, 'sentinel/s2'), ['Service/b']);

  // The same object now annotated for another resource moves with it.
  inv.set(obj('Service', 'a', 'sentinel/s2'));
  assert.deepEqual(names(inv, 'sentinel/s1'), ['ConfigMap/a']);
  assert.deepEqual(names(inv, 'sentinel/s2'), ['Service/a', 'Service/b']);

  // Set again unchanged: listed once.
  inv.set(obj('Service', 'b', 'sentinel/s2'));
  assert.deepEqual(names(inv, 'sentinel/s2'), ['Service/a', 'Service/b']);

  inv.forget(objectKey(obj('ConfigMap', 'a')));
  assert.deepEqual(names(inv, 'sentinel/s1'), []);
  inv.remove(objectKey(obj('Service', 'a')));
  assert.deepEqual(names(inv, 'sentinel/s2'), ['Service/b']);
  // Losing its annotation takes it out of its resource.
  inv.set(obj('Service', 'b'));
  assert.deepEqual(names(inv, 'sentinel/s2'), []);
  assert.equal(inv.all().length, 2);
});
