// The GC brake: an empty or wrong database must never empty a region. A GC pass that would
// delete more than `maxFraction` of krane's managed objects, and more than a handful, is
// refused and held until an operator confirms it (`unkey-infra krane gc --confirm`, which calls
// POST /gc/confirm on krane's own port). A confirmation approves exactly the resources that
// were held, for the next GC pass only (krane asks for a full sync at once). A pass that would
// take every managed object is always held, however few they are.
//
// `decide` is pure (data in, data out, table-tested); GcBrake keeps the held and approved sets.
// Everything runs on krane's event loop: no locking.

/**
 * At most this many objects may always go without a confirmation: a cluster of a dozen objects
 * must be able to lose a few without a human, and ten objects is a handful of deployments.
 */
export const GC_BRAKE_MIN_OBJECTS = 10;

export interface GcPlan {
  /** Objects the pass would delete. */
  wouldDelete: number;
  /** Managed objects in the inventory before the pass. */
  managed: number;
  maxFraction: number;
}

/**
 * True when the pass may run without a confirmation. A pass that takes every managed object is
 * never "a handful", however small the region: that is what an empty database looks like
 * (normal deletes come through the feed, not GC). maxFraction 1 turns the brake off entirely.
 */
export function withinLimit(p: GcPlan): boolean {
  if (p.maxFraction >= 1) return true;
  if (p.managed > 0 && p.wouldDelete >= p.managed) return false;
  return p.wouldDelete <= GC_BRAKE_MIN_OBJECTS || p.wouldDelete <= p.maxFraction * p.managed;
}

export type GcDecision = { run: true; approved: boolean } | { run: false };

/** Run when within the limit, or when every doomed resource was approved by an operator. */
export function decide(p: GcPlan, doomed: ReadonlySet<string>, approved: ReadonlySet<string>): GcDecision {
  if (withinLimit(p)) return { run: true, approved: false };
  for (const r of doomed) if (!approved.has(r)) return { run: false };
  return { run: true, approved: true };
}

export class GcBrake {
  private held: { resources: Set<string>; objects: number } | undefined;
  private approved = new Set<string>();

  constructor(readonly maxFraction: number) {}

  /** Objects held back now (0 when the brake is released). */
  get heldObjects(): number {
    return this.held?.objects ?? 0;
  }

  /**
   * Decides a pass; a refused pass replaces what was held. An approval is good for the next pass
   * only, whatever it decides: kept past a pass that did not need it, it would let the same wipe
   * through unasked days later (same resource ids after the same bad restore).
   */
  check(plan: Omit<GcPlan, 'maxFraction'>, doomed: ReadonlySet<string>): GcDecision {
    const d = decide({ ...plan, maxFraction: this.maxFraction }, doomed, this.approved);
    this.approved = new Set();
    this.held = d.run ? undefined : { resources: new Set(doomed), objects: plan.wouldDelete };
    return d;
  }

  /** An operator's confirmation: approves what is held; returns how many objects that is. */
  confirm(): number {
    if (!this.held) return 0;
    this.approved = this.held.resources;
    const n = this.held.objects;
    this.held = undefined;
    return n;
  }
}
