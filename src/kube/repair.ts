// Drift repair scheduling and its counters, apart from the ApplyController that runs the
// repairs. A drifted resource is repaired once per burst: events for one resource within
// REPAIR_DEBOUNCE_MS cause one re-apply (a hand-deleted StatefulSet also deletes pods and moves
// its Service's endpoints; one apply covers it all). The counters say how many objects krane
// had to put back, by kind, and which one last: `krane_drift_repairs_total{kind}`, the
// heartbeat's `drift` and `GET /v1/regions`. A repair first reads the resource's objects again
// (liveObjects), and counts only the objects its re-apply changed (repairedObjects).
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from './client';
import { ownedContent, type AppliedObject } from './drift-check';
import type { ManifestObject } from './manifests';
import { objectKey } from './manifests/types';

type Live = KubernetesObject & Record<string, unknown>;

/** The live objects of what krane applied (one GET each), by object key; absent when missing. */
export async function liveObjects(api: KubeClient, applied: Iterable<AppliedObject>): Promise<Map<string, Live>> {
  const out = new Map<string, Live>();
  for (const a of applied) {
    const m = a.desired.metadata;
    const live = await api.get({ apiVersion: a.desired.apiVersion, kind: a.desired.kind, namespace: m.namespace, name: m.name });
    if (live) out.set(objectKey(a.desired), live as Live);
  }
  return out;
}

/**
 * Of a repair's re-apply, the objects it put back: those missing before, those whose content
 * krane decides (drift-check.ts ownedContent) it changed, and workloads it raised to their
 * autoscaler's minimum. An object whose body moved only in fields other managers own is sent
 * too, but krane's apply leaves it as it was: no repair.
 */
export function repairedObjects(before: ReadonlyMap<string, Live>, results: ReadonlyMap<string, { entry: AppliedObject; wrote: boolean; live?: KubernetesObject; raised?: boolean }>): ManifestObject[] {
  const out: ManifestObject[] = [];
  for (const [key, r] of results) {
    const was = before.get(key);
    const desired = r.entry.desired;
    const changed = !was || r.raised === true || (r.wrote && r.live !== undefined && ownedContent(desired, was) !== ownedContent(desired, r.live as Live));
    if (changed) out.push(desired);
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
