// Drift repair scheduling and its counters, apart from the ApplyController that runs the
// repairs. A drifted resource is repaired once per burst: events for one resource within
// REPAIR_DEBOUNCE_MS cause one re-apply (a hand-deleted StatefulSet also deletes pods and moves
// its Service's endpoints; one apply covers it all). The counters say how many objects krane
// had to put back, by kind, and which one last: `krane_drift_repairs_total{kind}`, the
// heartbeat's `drift` and `GET /v1/regions`. A repair first reads the resource's objects again
// (driftedObjects): only what is still missing or drifted then counts.
import type { KubeClient } from './client';
import { driftReason } from './drift-check';
import type { ManifestObject } from './manifests';

/** Of what krane applied, the objects that are missing or drifted now (one GET each). */
export async function driftedObjects(api: KubeClient, applied: Iterable<{ desired: ManifestObject; generation: number | undefined }>): Promise<ManifestObject[]> {
  const out: ManifestObject[] = [];
  for (const a of applied) {
    const m = a.desired.metadata;
    const live = await api.get({ apiVersion: a.desired.apiVersion, kind: a.desired.kind, namespace: m.namespace, name: m.name });
    if (!live || driftReason(a.desired, a.generation, live)) out.push(a.desired);
  }
  return out;
}

/**
 * Short enough to keep a repair well inside the 2 s krane promises (p99 from the change to the
 * object back), long enough to fold one change's burst of watch events into one apply.
 */
export const REPAIR_DEBOUNCE_MS = 100;

export interface DriftSnapshot {
  /** Objects put back since this krane started. */
  repaired: number;
  byKind: Record<string, number>;
  /** ISO time of the last repair, and the object (`Kind namespace/name`). */
  lastAt?: string;
  lastObject?: string;
}

export class DriftCounters {
  private repaired = 0;
  private readonly byKind: Record<string, number> = {};
  private lastAt: string | undefined;
  private lastObject: string | undefined;

  record(objects: readonly { kind: string; namespace: string; name: string }[]): void {
    for (const o of objects) {
      this.repaired++;
      this.byKind[o.kind] = (this.byKind[o.kind] ?? 0) + 1;
      this.lastObject = `${o.kind} ${o.namespace}/${o.name}`;
      this.lastAt = new Date().toISOString();
    }
  }

  snapshot(): DriftSnapshot {
    return {
      repaired: this.repaired,
      byKind: { ...this.byKind },
      ...(this.lastAt ? { lastAt: this.lastAt, lastObject: this.lastObject } : {}),
    };
  }
}

/** Debounced, de-duplicated repair requests keyed by resource; `run` does the repair. */
export class RepairQueue {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private running = 0;
  private closed = false;

  constructor(private readonly run: (resource: string) => Promise<void>) {}

  schedule(resource: string): void {
    if (this.closed || this.timers.has(resource)) return;
    this.timers.set(
      resource,
      setTimeout(() => {
        this.timers.delete(resource);
        this.running++;
        void this.run(resource).finally(() => this.running--);
      }, REPAIR_DEBOUNCE_MS),
    );
  }

  /** A repair scheduled but not started is dropped (the resource was deleted or GC'd). */
  cancel(resource: string): void {
    const t = this.timers.get(resource);
    if (t) clearTimeout(t);
    this.timers.delete(resource);
  }

  get pending(): number {
    return this.timers.size + this.running;
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
