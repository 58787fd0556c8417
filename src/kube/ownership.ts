// Which objects are krane's. The managed-by label says so to people, dashboards and selectors,
// but anyone can remove it (`kubectl label sts X app.kubernetes.io/managed-by-`), and an object
// that lost it used to become someone else's for good: never repaired, every later apply refused
// (ERR_KUBE_UNMANAGED_CONFLICT), left running by stop and GC. What krane applied is recorded by
// the API server itself: krane's server-side apply leaves a managedFields entry of manager
// `krane`, operation Apply, on the object's main resource, which a label edit does not remove.
// So an object is krane's when it carries the label (as before, and as objects labelled by hand
// for adoption do) or krane's apply entry. An object of the same name that krane never applied
// has neither and is still refused and never deleted.
import type { KubernetesObject } from '@kubernetes/client-node';
import { FIELD_MANAGER } from './client';
import { isManaged } from './manifests';

/** Whether krane's server-side apply wrote to the object's main resource (not a subresource). */
export function appliedByKrane(o: Pick<KubernetesObject, 'metadata'>): boolean {
  return (o.metadata?.managedFields ?? []).some((m) => m.manager === FIELD_MANAGER && m.operation === 'Apply' && (m.subresource ?? '') === '');
}

/** Whether the object is krane's: its label, or krane's own apply recorded by the API server. */
export function isKranes(o: Pick<KubernetesObject, 'metadata'>): boolean {
  return isManaged(o.metadata?.labels) || appliedByKrane(o);
}
