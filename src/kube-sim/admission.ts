// The API server's admission and storage refusals that are not schema validation: creates in
// a missing namespace (404) or one being deleted (403, NamespaceLifecycle), pods the
// namespace's Pod Security Standard forbids (403, pod-security-policy.ts, whose warnings the
// admit functions return for the response's Warning headers), ResourceQuota
// object counts (403), updates of kinds that forbid unconditional updates without a
// resourceVersion (422), and etcd's size limit on a stored object (500).
import type { ObjectStore } from './object-store';
import { admitPod, workloadWarnings } from './pod-security-policy';
import { checkQuota } from './quota';
import { mustResourceForKind, type ResourceDef } from './resources';
import { etcdTooLarge, forbiddenError, invalidError, namespaceNotFound, STORED_OBJECT_LIMIT } from './status';
import type { KubeObject } from './types';

const NAMESPACE = mustResourceForKind('v1', 'Namespace');
const POD = mustResourceForKind('v1', 'Pod');

/** The served kinds whose pod template Pod Security warns about (the plugin's pod controllers). */
const POD_CONTROLLERS = new Set(['apps/v1/Deployment', 'apps/v1/StatefulSet']);

function podSecurity(def: ResourceDef, namespace: KubeObject | undefined, obj: KubeObject, old?: KubeObject): string[] {
  if (def === POD) return admitPod(def, namespace, obj, old);
  return POD_CONTROLLERS.has(`${obj.apiVersion}/${obj.kind}`) ? workloadWarnings(namespace, obj) : [];
}

/**
 * Refuses a create of `name` (of type `def`) in namespace `ns` the way admission would; returns
 * the warnings admission adds to an allowed request.
 */
export function admitCreate(store: ObjectStore, def: ResourceDef, ns: string, name: string, obj?: KubeObject): string[] {
  if (!def.namespaced) return [];
  const namespace = store.get(NAMESPACE, '', ns);
  if (!namespace) throw namespaceNotFound(ns);
  if (namespace.metadata.deletionTimestamp) {
    throw forbiddenError(def, name, `unable to create new content in namespace ${ns} because it is being terminated`, [
      { reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' },
    ]);
  }
  const warnings = obj ? podSecurity(def, namespace, obj) : [];
  checkQuota(store, def, ns, name);
  return warnings;
}

/** Pod Security on an update of the object itself (not a subresource): 403 or warnings. */
export function admitObjectUpdate(store: ObjectStore, def: ResourceDef, obj: KubeObject, old: KubeObject): string[] {
  if (!def.namespaced || !obj.metadata.namespace) return [];
  return podSecurity(def, store.get(NAMESPACE, '', obj.metadata.namespace), obj, old);
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
