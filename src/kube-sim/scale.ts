// The `scale` subresource (autoscaling/v1 Scale) of StatefulSets and Deployments, as pure
// conversions: the Scale view of a workload, and the workload with a Scale's replicas.
import type { StatusCause } from './status';
import type { KubeObject } from './types';

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** A LabelSelector in the string form Scale.status.selector carries (`app=web,tier in (a,b)`). */
export function selectorString(sel: LabelSelector | undefined): string {
  const parts = Object.entries(sel?.matchLabels ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`);
  for (const e of sel?.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.join(',');
}

export function toScale(obj: KubeObject): KubeObject {
  const m = obj.metadata;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
    spec: { replicas: obj.spec?.replicas ?? 1 },
    status: { replicas: obj.status?.replicas ?? 0, selector: selectorString(obj.spec?.selector) },
  };
}

/** Causes of a 422 for a Scale body (replicas must be a non-negative integer). */
export function scaleCauses(scale: KubeObject): StatusCause[] {
  const r = scale.spec?.replicas;
  if (r === undefined) return [];
  if (typeof r !== 'number' || !Number.isInteger(r)) return [{ reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(r)}: must be an integer`, field: 'spec.replicas' }];
  if (r < 0) return [{ reason: 'FieldValueInvalid', message: `Invalid value: ${r}: must be greater than or equal to 0`, field: 'spec.replicas' }];
  return [];
}

/** The workload with the Scale's replicas (everything else unchanged). */
export function applyScale(obj: KubeObject, scale: KubeObject): KubeObject {
  const replicas = scale.spec?.replicas ?? 0;
  return { ...structuredClone(obj), spec: { ...obj.spec, replicas } };
}
