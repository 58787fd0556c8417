// Whether a live object still is what krane applied, as one pure function (table-tested in
// tests/kube/drift-check.test.ts). Only what krane owns counts: its labels and annotations, and
// its spec. A spec change of a kind with metadata.generation shows as the generation moving past
// the one krane's own apply produced, whoever made it and through whichever door (an update, a
// patch, another manager's apply, the scale subresource). Kinds without a generation (Service,
// ConfigMap) are compared field by field: every value krane sent must still be there. Fields the
// server or other controllers add (clusterIP, defaults, status) are not krane's and never count.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ManifestObject } from './manifests';

/** Top-level fields that are not desired content. */
const NOT_CONTENT = new Set(['apiVersion', 'kind', 'metadata', 'status']);

/**
 * Why `live` differs from `desired` (a short, log-safe phrase naming the field, never a value,
 * since a ConfigMap or Secret value may be sensitive), or undefined when it does not.
 * `appliedGeneration`: the generation krane's last apply returned; undefined for kinds without.
 */
export function driftReason(desired: ManifestObject, appliedGeneration: number | undefined, live: KubernetesObject): string | undefined {
  const md = live.metadata ?? {};
  for (const [k, v] of Object.entries(desired.metadata.labels)) if (md.labels?.[k] !== v) return `label ${k}`;
  for (const [k, v] of Object.entries(desired.metadata.annotations)) if (md.annotations?.[k] !== v) return `annotation ${k}`;
  if (appliedGeneration !== undefined) {
    return md.generation !== undefined && md.generation > appliedGeneration ? 'spec (generation moved)' : undefined;
  }
  for (const [field, want] of Object.entries(desired)) {
    if (NOT_CONTENT.has(field)) continue;
    const at = firstDifference(want, (live as Record<string, unknown>)[field], field);
    if (at) return at;
  }
  return undefined;
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
