// ApplyController: the ResourceController (src/sync/controller.ts) that makes the cluster match
// desired states. One instance per krane. Calls for different resources run concurrently;
// calls for one resource (from the watcher or from drift repair via `observe`) queue behind
// each other, so per-resource work never interleaves.
//
// Apply: build the objects, then for each one
//   1. skip it when the live object carries this manifest hash, nobody but krane wrote its spec
//      or labels, and its body is the one krane's last apply left (inventory re-listed after
//      `verifyAfterMs`, half the resync interval); a drift repair (observe → drift-check.ts →
//      repair.ts) skips nothing;
//   2. if the object is unknown, GET it first: an existing object that is not krane's
//      (ownership.ts: neither its label nor krane's apply entry, nor the incarnation krane
//      applied) is someone else's and is a PermanentError, never overwritten;
//   3. server-side apply with force under the `krane` field manager (a no-op on the server
//      when nothing changed). A refusal becomes a coded error as src/kube/classify.ts decides:
//      permanent for this object (report and move on) or retry later.
// A 422 for an immutable field of a StatefulSet or Deployment recreates it. A workload whose
// replicas its autoscaler owns is raised to the autoscaler's minReplicas when found below it
// (an HPA never scales up from 0). Delete and GC only target krane's objects (inventory or
// GET), with a uid precondition, through the GC brake.
// A resource whose kind is not served (no CRD) waits in kind-wait.ts for a low-rate retry.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log';
import { refKey, SENTINEL_NAMESPACE, WORKLOAD_NAMESPACE, type ApplyState, type GcStatus, type ResourceController, type ResourceRef } from '../sync/wire';
import type { KubeClient } from './client';
import { KubeApplyError, kubeError } from './errors';
import { GcBrake } from './gc-brake';
import { expectedObjects, forEachLimited, managedKinds, refOf, resourceFromLabels, sortForDelete, toObj } from './objects';
export { managedKinds };
import { Inventory, type InventoryEntry } from './inventory';
import { ANNOTATION, buildObjects, deploymentObjectName, type BuildOptions } from './manifests';
import { objectKey } from './manifests/types';
import { driftReason, replicaFloors } from './drift-check';
import { DriftCounters, liveObjects, repairedObjects, RepairQueue } from './repair';
import { isKranes } from './ownership';
import { ObjectApplier, type AppliedEntry, type ObjectResult } from './object-apply';
import { KindWait } from './kind-wait';

export interface ApplyControllerOptions {
  api: KubeClient;
  region: string;
  logger: Logger;
  build?: BuildOptions;
  workloadNamespace?: string;
  sentinelNamespace?: string;
  /** Age after which the inventory is re-listed before trusting it to skip an apply. */
  verifyAfterMs: number;
  /** Parallel deletes during GC. */
  gcConcurrency?: number;
  /**
   * After every successful apply; `wrote` says whether any object had to be sent (false: all
   * skipped as unchanged), `uids` its objects' uids now, `state` what was applied. krane clears
   * failure reports, stamps pod reports with the state's generation, resends the owned pods. */
  onApplied?(ref: ResourceRef, wrote: boolean, uids: ReadonlySet<string>, state: ApplyState): void;
  /** After every successful delete of a resource's objects (clears an earlier failure report). */
  onDeleted?(ref: ResourceRef): void;
  /** After an object was deleted and created again because a field it changes is immutable. */
  onRecreated?(ref: ResourceRef, why: string): void;
  /** The GC brake's share (src/kube/gc-brake.ts); 1 turns it off. Default 0.5. */
  gcMaxFraction?: number;
  /** After every GC pass: the brake's state, for ctrl and the metrics. */
  onGc?(status: GcStatus): void;
  /** How often resources waiting for a kind the cluster does not serve are tried again. */
  kindRetryMs?: number;
}

/**
 * Parallel deletes during GC. Enough to hide round-trip latency, few enough that a mass GC
 * does not trip API server priority-and-fairness limits for the whole cluster.
 */
const DEFAULT_GC_CONCURRENCY = 16;

export interface ControllerStats {
  applied: number;
  skipped: number;
  deleted: number;
  /** Resources re-applied because their objects were deleted or changed behind krane's back. */
  repaired: number;
  /** Objects deleted and created again for a change to an immutable field. */
  recreated: number;
  /** GC passes refused by the brake. */
  gcRefused: number;
}

/** What krane last applied for a resource, kept to repair drift without asking ctrl. */
interface Remembered {
  ref: ResourceRef;
  state: ApplyState;
  /** Object key → what was applied and how the server left it. */
  objects: Map<string, AppliedEntry>;
}

export class ApplyController implements ResourceController {
  readonly inventory: Inventory;
  readonly stats: ControllerStats = { applied: 0, skipped: 0, deleted: 0, repaired: 0, recreated: 0, gcRefused: 0 };
  readonly brake: GcBrake;
  private readonly remembered = new Map<string, Remembered>();
  /**
   * Object key → the resource krane applied it for: how a watch event finds its resource when
   * the object's labels and annotations were edited away (the annotation is only a fallback).
   */
  private readonly owners = new Map<string, string>();
  /** Per-resource queue: the watcher and drift repair never work on one resource at once. */
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly repairs = new RepairQueue((resource) => this.repair(resource));
  /** Objects put back by drift repair, by kind (metrics, heartbeat, GET /v1/regions). */
  readonly drift = new DriftCounters();
  /** Resources whose kind the cluster does not serve (no CRD), retried at a low rate. */
  readonly kindWait: KindWait;
  private closed = false;
  private readonly api: KubeClient;
  private readonly log: Logger;
  private readonly workloadNs: string;
  private readonly sentinelNs: string;
  private readonly objects: ObjectApplier;

  constructor(private readonly opts: ApplyControllerOptions) {
    this.api = opts.api;
    this.log = opts.logger;
    this.workloadNs = opts.workloadNamespace ?? WORKLOAD_NAMESPACE;
    this.sentinelNs = opts.sentinelNamespace ?? SENTINEL_NAMESPACE;
    this.inventory = new Inventory(this.api, managedKinds(this.workloadNs, this.sentinelNs), opts.verifyAfterMs);
    this.brake = new GcBrake(opts.gcMaxFraction ?? 0.5);
    this.kindWait = new KindWait((ref, state) => this.apply(ref, state), opts.kindRetryMs);
    this.objects = new ObjectApplier({ api: this.api, inventory: this.inventory, log: this.log, stats: this.stats, fence: () => this.fence(), onRecreated: opts.onRecreated });
  }

  apply(ref: ResourceRef, state: ApplyState): Promise<void> {
    const key = refKey(ref);
    return this.serial(key, async () => {
      try {
        await this.applyNow(ref, state);
        this.kindWait.unpark(key);
      } catch (err) {
        if (err instanceof KubeApplyError && err.code === 'ERR_KUBE_KIND_UNAVAILABLE' && !this.closed) this.kindWait.park(key, ref, state);
        throw err;
      }
    });
  }

  delete(ref: ResourceRef): Promise<void> {
    const key = refKey(ref);
    // Forgotten inside the lock: an apply queued before this delete must not re-remember it.
    return this.serial(key, async () => {
      this.forgetResource(key);
      this.kindWait.unpark(key);
      await this.deleteNow(ref);
      this.opts.onDeleted?.(ref);
    });
  }

  private serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }

  /**
   * Feeds a watch event about a managed object (src/kube/drift.ts). Keeps the inventory
   * current, and when an object of a resource krane applied was deleted or no longer carries
   * what krane applied (src/kube/drift-check.ts), re-applies the last desired state.
   */
  observe(type: 'upsert' | 'delete', obj: KubernetesObject): void {
    const key = objectKey(obj);
    const resource = this.owners.get(key) ?? obj.metadata?.annotations?.[ANNOTATION.resource];
    const applied = resource ? this.remembered.get(resource)?.objects.get(key) : undefined;
    // Another's object (or one that stopped being krane's): an incarnation krane applied is
    // still krane's to put back; anything else is not krane's business.
    const mine = isKranes(obj) || (applied?.uid !== undefined && applied.uid === obj.metadata?.uid);
    if (type === 'delete' || !mine) this.inventory.remove(key);
    else this.inventory.set(obj);
    if (!applied) return;
    const why = type === 'delete' || !mine ? 'deleted or replaced' : driftReason(applied, obj as KubernetesObject & Record<string, unknown>);
    if (why) {
      this.log.debug({ resource, kind: obj.kind, name: obj.metadata?.name, why }, 'drift seen');
      this.repairs.schedule(resource!);
    }
  }

  /**
   * Re-applies what krane last applied for `resource`, sending every object (no skips). Only
   * objects the re-apply changed count as repaired (repair.ts): a field another manager owns
   * changed the body, but krane's apply keeps it, and that is no repair.
   */
  private async repair(resource: string): Promise<void> {
    try {
      await this.serial(resource, async () => {
        const r = this.remembered.get(resource);
        if (!r || this.closed) return;
        // Read again under the lock: an event that raced krane's own apply is no drift.
        const before = await liveObjects(this.api, r.objects.values());
        const drifted = [...r.objects.values()].some((a) => {
          const live = before.get(objectKey(a.desired));
          return !live || driftReason(a, live) !== undefined;
        });
        if (!drifted) return;
        const repaired = repairedObjects(before, await this.applyNow(r.ref, r.state, true));
        if (repaired.length === 0) return;
        this.stats.repaired++;
        this.drift.record(repaired.map((o) => ({ kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name })));
        this.log.info({ resource, objects: repaired.map((o) => `${o.kind}/${o.metadata.name}`) }, 'repaired drifted resource');
      });
    } catch (err) {
      this.log.warn({ resource, err: (err as Error).message }, 'drift repair failed, next resync retries');
    }
  }

  /** Drift repairs scheduled or running: 0 is the evidence that nothing is about to be re-applied. */
  get repairsPending(): number {
    return this.repairs.pending;
  }

  /** The uid of the deployment's StatefulSet as krane knows it (Inventory#uidOf). */
  workloadOwner(deploymentId: string): string | null | undefined {
    return this.inventory.uidOf(objectKey({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { namespace: this.workloadNs, name: deploymentObjectName(deploymentId) } }));
  }

  /** Stops scheduling repairs (shutdown). */
  close(): void {
    this.closed = true;
    this.repairs.close();
    this.kindWait.close();
  }

  /**
   * Applies a resource's objects; returns what applying each did, by object key. `force` sends
   * every one (a repair verifies nothing).
   */
  private async applyNow(ref: ResourceRef, state: ApplyState, force = false): Promise<Map<string, ObjectResult>> {
    if (state.region !== this.opts.region || ref.region !== this.opts.region) {
      throw new KubeApplyError('ERR_KUBE_WRONG_REGION', `desired state for region ${state.region} sent to krane of ${this.opts.region}`);
    }
    // Objects outside the namespaces krane lists would be invisible to the inventory and GC.
    const namespace = state.kind === 'deployment' ? this.workloadNs : this.sentinelNs;
    if (state.namespace !== namespace) {
      throw new KubeApplyError('ERR_KUBE_WRONG_NAMESPACE', `${state.kind} objects belong in namespace ${namespace}, not ${state.namespace}`);
    }
    const objects = buildObjects(state, { ...this.opts.build, workloadNamespace: this.workloadNs });
    await this.inventory.ensureFresh().catch((err) => {
      throw kubeError(err, 'listing managed objects');
    });
    const floors = replicaFloors(objects, objectKey);
    const results = new Map<string, ObjectResult>();
    const resource = refKey(ref);
    const before = this.remembered.get(resource);
    for (const obj of objects) {
      const key = objectKey(obj);
      const r = await this.objects.apply(ref, obj, force, before?.objects.get(key), floors.get(key));
      results.set(key, r);
      this.owners.set(key, resource);
    }
    this.remembered.set(resource, { ref, state, objects: new Map([...results].map(([k, r]) => [k, r.entry])) });
    // Objects this resource had before but no longer needs (e.g. an environment's gossip objects
    // after an environment move) go now rather than waiting for the next GC.
    const owned = this.inventory.byResource(resource);
    const stale = owned.filter((e) => !results.has(objectKey(toObj(e))));
    for (const e of sortForDelete(stale)) await this.deleteEntry(e);
    for (const key of before?.objects.keys() ?? []) if (!results.has(key)) this.owners.delete(key);
    const uids = new Set(owned.flatMap((e) => (e.uid && !stale.includes(e) ? [e.uid] : [])));
    this.opts.onApplied?.(ref, [...results.values()].some((r) => r.wrote), uids, state);
    return results;
  }

  /** Checked before each write and delete: a krane that lost its Lease closes, and an apply or
   *  GC pass already running must not go on writing beside the new leader. */
  private fence(): void {
    if (this.closed) throw new Error('krane is stopping (or lost its lease): no further writes');
  }

  private async deleteNow(ref: ResourceRef): Promise<void> {
    await this.inventory.ensureFresh();
    const resource = refKey(ref);
    const targets = new Map<string, InventoryEntry>();
    for (const e of this.inventory.byResource(resource)) targets.set(objectKey(toObj(e)), e);
    // Objects whose names follow from the id are checked even when the inventory missed them
    // (created after the last list by an apply whose response we never saw).
    for (const r of expectedObjects(ref, this.workloadNs, this.sentinelNs)) {
      const key = objectKey(toObj(r));
      if (targets.has(key)) continue;
      const live = await this.api.get(r);
      if (!live || !isKranes(live)) continue;
      const owner = live.metadata?.annotations?.[ANNOTATION.resource];
      if (owner !== undefined && owner !== resource) continue;
      this.inventory.set({ ...live, apiVersion: r.apiVersion, kind: r.kind });
      targets.set(key, this.inventory.get(key)!);
    }
    for (const e of sortForDelete([...targets.values()])) await this.deleteEntry(e);
  }

  async gc(desired: ReadonlySet<string>): Promise<void> {
    await this.inventory.ensureFresh(true);
    const doomed = new Map<string, InventoryEntry[]>();
    for (const e of this.inventory.all()) {
      if (!e.owned) continue;
      // krane's own record first: labels and annotations may have been edited by hand.
      const resource = this.owners.get(objectKey(toObj(e))) ?? e.resource ?? resourceFromLabels(e.labels);
      if (!resource) {
        this.log.warn({ kind: e.kind, namespace: e.namespace, name: e.name }, 'managed object names no resource, gc leaves it');
        continue;
      }
      if (!desired.has(resource)) doomed.set(resource, [...(doomed.get(resource) ?? []), e]);
    }
    const objects = [...doomed.values()].reduce((n, list) => n + list.length, 0);
    const managed = this.inventory.all().filter((e) => e.owned).length;
    const decision = this.brake.check({ wouldDelete: objects, managed }, new Set(doomed.keys()));
    this.opts.onGc?.({ held: this.brake.heldObjects > 0, wouldDelete: objects, managed, maxFraction: this.brake.maxFraction, at: new Date().toISOString() });
    if (!decision.run) {
      this.stats.gcRefused++;
      this.log.error({ wouldDelete: objects, managed: this.inventory.all().length, maxFraction: this.brake.maxFraction }, 'gc refused: would delete too much, waiting for an operator to confirm');
      return;
    }
    for (const key of this.remembered.keys()) if (!desired.has(key) && !doomed.has(key)) this.forgetResource(key);
    // One resource's objects go in order under its lock (so a queued drift repair cannot bring
    // them back); different resources go in parallel.
    const groups = [...doomed.entries()];
    let deleted = 0;
    const errors: unknown[] = [];
    await forEachLimited(groups, this.opts.gcConcurrency ?? DEFAULT_GC_CONCURRENCY, ([resource, entries]) =>
      this.serial(resource, async () => {
        this.forgetResource(resource);
        for (const e of sortForDelete(entries)) {
          try {
            await this.deleteEntry(e);
            deleted++;
          } catch (err) {
            errors.push(err);
          }
        }
      }),
    );
    this.log.info({ resources: groups.length, deleted, failed: errors.length, kept: this.inventory.all().length }, 'gc done');
    if (errors.length) throw new AggregateError(errors, `gc failed to delete ${errors.length} objects`);
  }

  /** Krane no longer wants the resource: no drift repair may bring it back. */
  private forgetResource(resource: string): void {
    for (const key of this.remembered.get(resource)?.objects.keys() ?? []) if (this.owners.get(key) === resource) this.owners.delete(key);
    this.remembered.delete(resource);
    this.repairs.cancel(resource);
  }

  private async deleteEntry(e: InventoryEntry): Promise<void> {
    if (!e.owned) return;
    this.fence();
    const gone = !(await this.api.delete(e, e.uid));
    this.inventory.remove(objectKey(toObj(e)));
    if (!gone) this.stats.deleted++;
    this.log.debug({ kind: e.kind, namespace: e.namespace, name: e.name, alreadyGone: gone }, 'deleted object');
  }
}
