// Whether a live object still is what krane applied, as pure functions (table-tested in
// tests/kube/drift-check.test.ts). Only what krane owns counts: its labels and annotations, its
// spec, and spec.replicas only where krane sets it. Kinds with metadata.generation are judged
// against the object as krane's own apply left it (server defaults included): when the
// generation moved, the body is compared with that one leaving spec.replicas out, so a scale
// by the autoscaler that owns an autoscaled StatefulSet's replicas is no drift, while any other
// spec change is, whoever made it and through whichever door (an update, a patch, another
// manager's apply). Where krane sets replicas they must be krane's value; where an autoscaler
// owns them they must not be below its minReplicas (an HPA never scales up from 0, so
// `kubectl scale --replicas=0` would otherwise stop the workload for good). Kinds without a
// generation (Service, ConfigMap) are compared field by field: every value krane sent must
// still be there. Fields the server or other controllers add (clusterIP, defaults, status) are
// not krane's and never count.
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { canonical, type ManifestObject } from './manifests';

/** Top-level fields that are not desired content. */
const NOT_CONTENT = new Set(['apiVersion', 'kind', 'metadata', 'status']);

/** What krane knows of an object it applied, to tell drift from what others may change. */
export interface AppliedObject {
  desired: ManifestObject;
  /** metadata.generation right after krane's apply; undefined for kinds without one. */
  generation: number | undefined;
  /** bodyDigest of the object right after krane's apply (the server's defaults included). */
  digest?: string | undefined;
  /** For a workload whose replicas its autoscaler owns: the autoscaler's minReplicas. */
  replicasFloor?: number | undefined;
}

type Live = Pick<KubernetesObject, 'metadata'> & Record<string, unknown>;

const replicasOf = (o: unknown): number | undefined => ((o as { spec?: { replicas?: unknown } }).spec?.replicas as number | undefined) ?? undefined;

/**
 * A digest of an object's body (every top-level field but apiVersion, kind, metadata and
 * status) without spec.replicas, which is compared on its own (it may be an autoscaler's).
 */
export function bodyDigest(o: object): string {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (NOT_CONTENT.has(k)) continue;
    if (k === 'spec' && v && typeof v === 'object') {
      const { replicas: _r, ...rest } = v as Record<string, unknown>;
      body[k] = rest;
    } else body[k] = v;
  }
  return createHash('sha1').update(JSON.stringify(canonical(body))).digest('hex');
}

/**
 * Why `live` differs from what krane applied (a short, log-safe phrase naming the field, never a
 * value, since a ConfigMap or Secret value may be sensitive), or undefined when it does not.
 */
export function driftReason(a: AppliedObject, live: Live): string | undefined {
  const { desired } = a;
  const md = live.metadata ?? {};
  for (const [k, v] of Object.entries(desired.metadata.labels)) if (md.labels?.[k] !== v) return `label ${k}`;
  for (const [k, v] of Object.entries(desired.metadata.annotations)) if (md.annotations?.[k] !== v) return `annotation ${k}`;
  if (a.generation !== undefined) return generationDrift(a, live);
  for (const [field, want] of Object.entries(desired)) {
    if (NOT_CONTENT.has(field)) continue;
    const at = firstDifference(want, live[field], field);
    if (at) return at;
  }
  return undefined;
}

function generationDrift(a: AppliedObject, live: Live): string | undefined {
  const want = replicasOf(a.desired);
  // The API server defaults a missing replicas to 1.
  const have = replicasOf(live) ?? 1;
  if (want !== undefined && have !== want) return 'spec.replicas';
  if (want === undefined && a.replicasFloor !== undefined && have < a.replicasFloor) return 'spec.replicas below the autoscaler\'s minimum';
  const generation = live.metadata?.generation;
  if (generation === undefined || generation <= a.generation!) return undefined;
  // Without the body krane's apply left (a krane that never saw it), any move is a change.
  if (a.digest === undefined) return 'spec (generation moved)';
  return bodyDigest(live) === a.digest ? undefined : 'spec (generation moved)';
}

/**
 * What of `live` krane's apply decides: krane's labels and annotations, the body, and
 * spec.replicas where krane sets it. Two reads with the same content mean krane's apply
 * between them changed nothing: a repair counts only objects whose content it changed.
 */
export function ownedContent(desired: ManifestObject, live: Live): string {
  const md = live.metadata ?? {};
  const labels = Object.keys(desired.metadata.labels).map((k) => md.labels?.[k] ?? null);
  const annotations = Object.keys(desired.metadata.annotations).map((k) => md.annotations?.[k] ?? null);
  const replicas = replicasOf(desired) !== undefined ? (replicasOf(live) ?? null) : null;
  return JSON.stringify([labels, annotations, replicas, bodyDigest(live)]);
}

/** The path of the first value of `want` that `have` lacks or changed; lists must match in length. */
export function firstDifference(want: unknown, have: unknown, path: string): string | undefined {
  if (want === null || typeof want !== 'object') return want === have ? undefined : path;
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) return path;
    for (let i = 0; i < want.length; i++) {
      const d = firstDifference(want[i], have[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (have === null || typeof have !== 'object' || Array.isArray(have)) return path;
  for (const [k, v] of Object.entries(want)) {
    const d = firstDifference(v, (have as Record<string, unknown>)[k], `${path}.${k}`);
    if (d) return d;
  }
  return undefined;
}

/**
 * Per object key, the minReplicas of the autoscaler among `objects` that scales it: those
 * workloads' replicas are the autoscaler's, with that floor (src/kube/manifests/autoscaler.ts).
 */
export function replicaFloors(objects: readonly ManifestObject[], keyOf: (o: { apiVersion: string; kind: string; metadata: { name: string; namespace: string } }) => string): Map<string, number> {
  const floors = new Map<string, number>();
  for (const o of objects) {
    if (o.kind !== 'HorizontalPodAutoscaler') continue;
    const spec = o.spec as { scaleTargetRef?: { apiVersion?: string; kind?: string; name?: string }; minReplicas?: number } | undefined;
    const t = spec?.scaleTargetRef;
    if (!t?.apiVersion || !t.kind || !t.name) continue;
    floors.set(keyOf({ apiVersion: t.apiVersion, kind: t.kind, metadata: { name: t.name, namespace: o.metadata.namespace } }), spec?.minReplicas ?? 1);
  }
  return floors;
}
