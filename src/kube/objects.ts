// Small pure helpers about krane's objects: the kinds and namespaces it manages, refs, and the
// order deletes go in.
import { refKey, SENTINEL_NAMESPACE, WORKLOAD_NAMESPACE, type ResourceRef } from '../sync/wire';
import type { ObjectRef } from './client';
import type { ManagedKind } from './inventory';
import { deploymentObjectName, LABEL, routesObjectName, sentinelObjectName, type ManifestObject } from './manifests';

export function managedKinds(workloadNs = WORKLOAD_NAMESPACE, sentinelNs = SENTINEL_NAMESPACE): ManagedKind[] {
  return [
    { apiVersion: 'v1', kind: 'Service', namespace: workloadNs },
    { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: workloadNs },
    { apiVersion: 'v1', kind: 'Service', namespace: sentinelNs },
    { apiVersion: 'apps/v1', kind: 'Deployment', namespace: sentinelNs },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', namespace: sentinelNs },
    { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', namespace: sentinelNs },
    { apiVersion: 'v1', kind: 'ConfigMap', namespace: sentinelNs },
  ];
}

/** Workloads go first on delete so their pods stop before the Service that names them goes. */
const DELETE_ORDER: Record<string, number> = { StatefulSet: 0, Deployment: 0, PodDisruptionBudget: 1, CiliumNetworkPolicy: 1, ConfigMap: 1, Service: 2 };

export function refOf(o: ManifestObject): ObjectRef {
  return { apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name };
}

export function toObj(r: ObjectRef) {
  return { apiVersion: r.apiVersion, kind: r.kind, metadata: { name: r.name, namespace: r.namespace } };
}

export function sortForDelete<T extends ObjectRef>(list: T[]): T[] {
  return [...list].sort((a, b) => (DELETE_ORDER[a.kind] ?? 1) - (DELETE_ORDER[b.kind] ?? 1));
}

/** Fallback for managed objects missing the resource annotation (e.g. edited by hand). */
export function resourceFromLabels(labels: Record<string, string>): string | undefined {
  if (labels[LABEL.deploymentId]) return refKey({ type: 'deployment_topology', id: labels[LABEL.deploymentId]! });
  if (labels[LABEL.sentinelId]) return refKey({ type: 'sentinel', id: labels[LABEL.sentinelId]! });
  return undefined;
}

/** The objects a resource's id names (gossip objects are named by environment: none here). */
export function expectedObjects(ref: ResourceRef, workloadNs: string, sentinelNs: string): ObjectRef[] {
  if (ref.type === 'deployment_topology') {
    const name = deploymentObjectName(ref.id);
    return [
      { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: workloadNs, name },
      { apiVersion: 'v1', kind: 'Service', namespace: workloadNs, name },
    ];
  }
  if (ref.type === 'sentinel') {
    const name = sentinelObjectName(ref.id);
    return [
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: sentinelNs, name },
      { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', namespace: sentinelNs, name },
      { apiVersion: 'v1', kind: 'Service', namespace: sentinelNs, name },
    ];
  }
  if (ref.type === 'environment_routes') return [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: sentinelNs, name: routesObjectName(ref.id) }];
  // Gossip objects are named by environment, which a bare ref does not carry: inventory only.
  return [];
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
