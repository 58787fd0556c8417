// The drift property's pure half (tests/model/drift-property.test.ts drives it): the edits an
// operator makes with kubectl to krane's objects, as data for fast-check to generate; the
// request each one is (a patch by its own field manager, or a delete); what krane must count
// as repaired for it; and what of it is another manager's and must stay.
import fc from 'fast-check';
import type { ManifestObject } from '../../src/kube/manifests';
import { SENTINEL_CONTAINER } from '../../src/kube/manifests';

/** One of krane's objects, with what its desired state says about it. */
export interface Target {
  desired: ManifestObject;
  /** The autoscaler's minReplicas when an autoscaler owns its replicas. */
  floor?: number;
}

export type Edit =
  | { op: 'scale'; target: number; replicas: number }
  | { op: 'image'; target: number; tag: number }
  | { op: 'label' | 'annotate'; target: number; kranes: boolean; key: number; value: string | null }
  | { op: 'delete'; target: number }
  | { op: 'foreign-field'; target: number; value: number }
  | { op: 'hpa'; load: 'hot' | 'cold' };

export const editArb: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ op: fc.constant('scale' as const), target: fc.nat(), replicas: fc.integer({ min: 0, max: 5 }) }),
  fc.record({ op: fc.constant('image' as const), target: fc.nat(), tag: fc.nat({ max: 9 }) }),
  fc.record({ op: fc.constantFrom('label' as const, 'annotate' as const), target: fc.nat(), kranes: fc.boolean(), key: fc.nat(), value: fc.option(fc.constantFrom('x', 'y'), { nil: null }) }),
  fc.record({ op: fc.constant('delete' as const), target: fc.nat() }),
  fc.record({ op: fc.constant('foreign-field' as const), target: fc.nat(), value: fc.integer({ min: 1, max: 20 }) }),
  fc.record({ op: fc.constant('hpa' as const), load: fc.constantFrom('hot' as const, 'cold' as const) }),
);

/** Keys that are another manager's: kept through every repair. */
const FOREIGN_LABELS = ['example.com/team', 'example.com/cost-center'];
const FOREIGN_ANNOTATIONS = ['example.com/owner', 'example.com/ticket'];

const SCALABLE = new Set(['StatefulSet', 'Deployment']);
const replicasOf = (o: unknown) => (o as { spec?: { replicas?: number } }).spec?.replicas;

/** The targets an edit can act on: the scalable ones for scale and image, any for the rest. */
export function targetsFor(edit: Edit, all: readonly Target[]): readonly Target[] {
  return edit.op === 'scale' || edit.op === 'image' ? all.filter((t) => SCALABLE.has(t.desired.kind)) : all;
}

/**
 * A field no manifest of krane's sets, per kind, as a merge patch and the path to read it back
 * (the value another manager owns after the patch).
 */
export function foreignField(kind: string, value: number): { patch: Record<string, unknown>; path: string[]; value: unknown } {
  switch (kind) {
    // A StatefulSet's revisionHistoryLimit is fixed after creation (the API server says so).
    case 'StatefulSet':
      return { patch: { spec: { minReadySeconds: value } }, path: ['spec', 'minReadySeconds'], value };
    case 'Deployment':
      return { patch: { spec: { revisionHistoryLimit: value } }, path: ['spec', 'revisionHistoryLimit'], value };
    case 'Service':
      return { patch: { spec: { internalTrafficPolicy: 'Local' } }, path: ['spec', 'internalTrafficPolicy'], value: 'Local' };
    case 'HorizontalPodAutoscaler':
      return { patch: { spec: { behavior: { scaleUp: { stabilizationWindowSeconds: value } } } }, path: ['spec', 'behavior', 'scaleUp', 'stabilizationWindowSeconds'], value };
    case 'PodDisruptionBudget':
      return { patch: { spec: { unhealthyPodEvictionPolicy: 'AlwaysAllow' } }, path: ['spec', 'unhealthyPodEvictionPolicy'], value: 'AlwaysAllow' };
    default:
      return { patch: { data: { 'x-foreign': String(value) } }, path: ['data', 'x-foreign'], value: String(value) };
  }
}

/** The body of a label or annotate edit (a merge patch), and the key it touches. */
export function metadataEdit(edit: Extract<Edit, { op: 'label' | 'annotate' }>, t: Target): { key: string; patch: Record<string, unknown> } {
  const field = edit.op === 'label' ? 'labels' : 'annotations';
  const own = Object.keys(t.desired.metadata[field]);
  const foreign = edit.op === 'label' ? FOREIGN_LABELS : FOREIGN_ANNOTATIONS;
  const keys = edit.kranes && own.length ? own : foreign;
  const key = keys[edit.key % keys.length]!;
  return { key, patch: { metadata: { [field]: { [key]: edit.value } } } };
}

/** The image edit as a strategic merge patch of the one container (merged by name). */
export function imageEdit(edit: Extract<Edit, { op: 'image' }>, t: Target): Record<string, unknown> {
  const name = t.desired.kind === 'Deployment' ? SENTINEL_CONTAINER : 'app';
  return { spec: { template: { spec: { containers: [{ name, image: `evil.example/app:v${edit.tag}` }] } } } };
}

/**
 * How many objects krane must count as repaired after the edit, given the object as it was
 * before (live): one when the edit changed something krane owns, none otherwise (another
 * manager's field, an autoscaler's count within its bounds, a value that was already so).
 */
export function expectedRepairs(edit: Edit, t: Target | undefined, live: Record<string, any> | undefined): number {
  if (edit.op === 'hpa' || edit.op === 'foreign-field' || !t) return 0;
  if (edit.op === 'delete') return 1;
  if (edit.op === 'image') return 1;
  if (edit.op === 'scale') {
    if (replicasOf(live) === edit.replicas) return 0;
    const want = replicasOf(t.desired);
    if (want !== undefined) return edit.replicas !== want ? 1 : 0;
    return t.floor !== undefined && edit.replicas < t.floor ? 1 : 0;
  }
  const field = edit.op === 'label' ? 'labels' : 'annotations';
  const { key } = metadataEdit(edit, t);
  const mine = key in t.desired.metadata[field];
  const before = live?.metadata?.[field]?.[key] ?? null;
  return mine && before !== edit.value ? 1 : 0;
}

/** What another manager set on each object (object key → path → value), forgotten when the
 *  object is deleted (krane creates it anew without them). */
export class ForeignFields {
  private readonly byObject = new Map<string, Map<string, { path: string[]; value: unknown }>>();

  set(object: string, path: string[], value: unknown): void {
    let m = this.byObject.get(object);
    if (!m) this.byObject.set(object, (m = new Map()));
    // A null label or annotation is a removal: nothing of it must stay.
    if (value === null) m.delete(path.join('.'));
    else m.set(path.join('.'), { path, value });
  }

  deleted(object: string): void {
    this.byObject.delete(object);
  }

  /** The paths of `object` whose value is not the one another manager set (none: all kept). */
  missing(object: string, live: Record<string, any>): string[] {
    const out: string[] = [];
    for (const [name, { path, value }] of this.byObject.get(object) ?? []) {
      const have = path.reduce<any>((o, k) => o?.[k], live);
      if (have !== value) out.push(`${name}=${JSON.stringify(have)}`);
    }
    return out;
  }
}

/** Where a foreign label or annotation lives in the object, for ForeignFields. */
export const metadataPath = (op: 'label' | 'annotate', key: string) => ['metadata', op === 'label' ? 'labels' : 'annotations', key];
