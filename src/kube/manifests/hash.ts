// Stable manifest hashing. Keys are sorted before hashing so two builds of the same state hash
// the same regardless of property order; the hash annotation itself is left out.
import { createHash } from 'node:crypto';
import { ANNOTATION } from './labels';
import type { ManifestObject } from './types';

/** `v` with object keys sorted and undefined fields left out: equal content, equal JSON. */
export function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as object).sort()) {
      const val = (v as Record<string, unknown>)[k];
      if (val !== undefined) out[k] = canonical(val);
    }
    return out;
  }
  return v;
}

export function manifestHash(o: ManifestObject): string {
  const { [ANNOTATION.manifestHash]: _ignored, ...annotations } = o.metadata.annotations;
  const body = JSON.stringify(canonical({ ...o, metadata: { ...o.metadata, annotations } }));
  return createHash('sha256').update(body).digest('hex').slice(0, 32);
}

/** Returns a copy carrying its own hash annotation; what controllers send. */
export function withHash(o: ManifestObject): ManifestObject {
  return { ...o, metadata: { ...o.metadata, annotations: { ...o.metadata.annotations, [ANNOTATION.manifestHash]: manifestHash(o) } } };
}
