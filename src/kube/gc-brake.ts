// The GC brake: an empty or wrong database must never empty a region. A GC pass that would
// delete more than `maxFraction` of krane's managed objects, and more than a handful, is
// refused and held until an operator confirms it (`unkey-infra krane gc --confirm`, which calls
// POST /gc/confirm on krane's own port). A confirmation approves exactly the resources that
// were held; the next full sync's GC may delete those (and only those beyond the limit).
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

/** True when the pass may run without a confirmation. */
export function withinLimit(p: GcPlan): boolean {
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

  /** Decides a pass; a refused pass replaces what was held, an approved one uses up the approval. */
  check(plan: Omit<GcPlan, 'maxFraction'>, doomed: ReadonlySet<string>): GcDecision {
    const d = decide({ ...plan, maxFraction: this.maxFraction }, doomed, this.approved);
    if (!d.run) this.held = { resources: new Set(doomed), objects: plan.wouldDelete };
    else {
      this.held = undefined;
      if (d.approved) this.approved = new Set();
    }
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
