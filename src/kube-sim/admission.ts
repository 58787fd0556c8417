// The API server's admission and storage refusals that are not schema validation: creates in
// a missing namespace (404) or one being deleted (403, NamespaceLifecycle), pods the
// namespace's Pod Security Standard forbids (403, pod-security.ts), ResourceQuota
// object counts (403), updates of kinds that forbid unconditional updates without a
// resourceVersion (422), and etcd's size limit on a stored object (500).
import type { ObjectStore } from './object-store';
import { admitPodSecurity } from './pod-security';
import { checkQuota } from './quota';
import { mustResourceForKind, type ResourceDef } from './resources';
import { etcdTooLarge, forbiddenError, invalidError, namespaceNotFound, STORED_OBJECT_LIMIT } from './status';
import type { KubeObject } from './types';

const NAMESPACE = mustResourceForKind('v1', 'Namespace');
const POD = mustResourceForKind('v1', 'Pod');

/** Refuses a create of `name` (of type `def`) in namespace `ns` the way admission would. */
export function admitCreate(store: ObjectStore, def: ResourceDef, ns: string, name: string, obj?: KubeObject): void {
  if (!def.namespaced) return;
  const namespace = store.get(NAMESPACE, '', ns);
  if (!namespace) throw namespaceNotFound(ns);
  if (namespace.metadata.deletionTimestamp) {
    throw forbiddenError(def, name, `unable to create new content in namespace ${ns} because it is being terminated`, [
      { reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' },
    ]);
  }
  if (def === POD && obj) admitPodSecurity(def, namespace, obj);
  checkQuota(store, def, ns, name);
}

/** Kinds whose registry forbids unconditional updates (Lease) need the resourceVersion. */
export function admitUpdate(def: ResourceDef, name: string, resourceVersion: string | undefined): void {
  if (def.requiresResourceVersion && !resourceVersion) {
    throw invalidError(def, name, [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0x0: must be specified for an update', field: 'metadata.resourceVersion' }]);
  }
}

/** etcd refuses values over its request limit; the stored form is close to the JSON size. */
export function admitStoredSize(obj: KubeObject): void {
  if (Buffer.byteLength(JSON.stringify(obj)) > STORED_OBJECT_LIMIT) throw etcdTooLarge();
}
