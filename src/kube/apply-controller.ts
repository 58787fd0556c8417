// ApplyController: the ResourceController (src/sync/controller.ts) that makes the cluster match
// desired states. One instance per krane. Calls for different resources run concurrently;
// calls for one resource (from the watcher or from drift repair via `observe`) queue behind
// each other, so per-resource work never interleaves.
//
// Apply: build the objects, then for each one
//   1. skip it when the live object carries this manifest hash, nobody but krane wrote its spec
//      or labels and its generation is krane's (inventory re-listed after `verifyAfterMs`, half
//      the resync interval); a drift repair (observe → drift-check.ts → repair.ts) skips nothing;
//   2. if the object is unknown, GET it first: an existing object without the managed-by
//      label is someone else's and is a PermanentError, never overwritten;
//   3. server-side apply with force under the `krane` field manager (a no-op on the server
//      when nothing changed). A refusal becomes a coded error as src/kube/classify.ts decides:
//      permanent for this object (report and move on) or retry later.
// A 422 for an immutable field of a StatefulSet or Deployment recreates it. Delete and GC only
// target managed objects (inventory or GET), with a uid precondition, through the GC brake.
// A resource whose kind is not served (no CRD) waits in kind-wait.ts for a low-rate retry.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log';
import { refKey, SENTINEL_NAMESPACE, WORKLOAD_NAMESPACE, type ApplyState, type GcStatus, type ResourceController, type ResourceRef } from '../sync/wire';
import { apiFailure, type KubeClient, type ObjectRef } from './client';
import { isImmutableFieldChange } from './classify';
import { KubeApplyError, kubeError } from './errors';
import { GcBrake } from './gc-brake';
import { expectedObjects, forEachLimited, managedKinds, refOf, resourceFromLabels, sortForDelete, toObj } from './objects';
export { managedKinds };
import { Inventory, type InventoryEntry } from './inventory';
import { ANNOTATION, buildObjects, deploymentObjectName, isManaged, LABEL, type BuildOptions, type ManifestObject } from './manifests';
import { objectKey } from './manifests/types';
import { driftReason } from './drift-check';
import { DriftCounters, driftedObjects, RepairQueue } from './repair';
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
  /** Object key → what was applied and its generation right after (undefined for kinds without one). */
  objects: Map<string, { desired: ManifestObject; generation: number | undefined }>;
}

/** Kinds krane may delete and create again when a change to an immutable field is refused. */
const RECREATABLE = new Set(['StatefulSet', 'Deployment']);

export class ApplyController implements ResourceController {
  readonly inventory: Inventory;
  readonly stats: ControllerStats = { applied: 0, skipped: 0, deleted: 0, repaired: 0, recreated: 0, gcRefused: 0 };
  readonly brake: GcBrake;
  private readonly remembered = new Map<string, Remembered>();
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

  constructor(private readonly opts: ApplyControllerOptions) {
    this.api = opts.api;
    this.log = opts.logger;
    this.workloadNs = opts.workloadNamespace ?? WORKLOAD_NAMESPACE;
    this.sentinelNs = opts.sentinelNamespace ?? SENTINEL_NAMESPACE;
    this.inventory = new Inventory(this.api, managedKinds(this.workloadNs, this.sentinelNs), opts.verifyAfterMs);
    this.brake = new GcBrake(opts.gcMaxFraction ?? 0.5);
    this.kindWait = new KindWait((ref, state) => this.apply(ref, state), opts.kindRetryMs);
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
    if (!isManaged(obj.metadata?.labels)) return;
    const key = objectKey(obj);
    if (type === 'delete') this.inventory.remove(key);
    else this.inventory.set(obj);
    const resource = obj.metadata?.annotations?.[ANNOTATION.resource];
    const applied = resource ? this.remembered.get(resource)?.objects.get(key) : undefined;
    if (!applied) return;
    const why = type === 'delete' ? 'deleted' : driftReason(applied.desired, applied.generation, obj);
    if (why) {
      this.log.debug({ resource, kind: obj.kind, name: obj.metadata?.name, why }, 'drift seen');
      this.repairs.schedule(resource!);
    }
  }

  /** Re-applies what krane last applied for `resource`, sending every object (no skips). */
  private async repair(resource: string): Promise<void> {
    try {
      await this.serial(resource, async () => {
        const r = this.remembered.get(resource);
        // Read again under the lock: an event that raced krane's own apply is no drift.
        const drifted = r && !this.closed ? await driftedObjects(this.api, r.objects.values()) : [];
        if (drifted.length === 0) return;
        await this.applyNow(r!.ref, r!.state, true);
        this.stats.repaired++;
        this.drift.record(drifted.map((o) => ({ kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name })));
        this.log.info({ resource, objects: drifted.map((o) => `${o.kind}/${o.metadata.name}`) }, 'repaired drifted resource');
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

  /** Returns the objects it had to send; `force` sends every one (a repair verifies nothing). */
  private async applyNow(ref: ResourceRef, state: ApplyState, force = false): Promise<ManifestObject[]> {
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
    const sent: ManifestObject[] = [];
    const applied: Remembered['objects'] = new Map();
    const before = this.remembered.get(refKey(ref));
    for (const obj of objects) {
      const r = await this.applyObject(ref, obj, force, before?.objects.get(objectKey(obj))?.generation);
      applied.set(objectKey(obj), { desired: obj, generation: r.generation });
      if (r.wrote) sent.push(obj);
    }
    this.remembered.set(refKey(ref), { ref, state, objects: applied });
    // Objects this resource had before but no longer needs (e.g. an environment's gossip objects
    // after an environment move) go now rather than waiting for the next GC.
    const wanted = new Set(objects.map(objectKey));
    const owned = this.inventory.byResource(refKey(ref));
    const stale = owned.filter((e) => !wanted.has(objectKey(toObj(e))));
    for (const e of sortForDelete(stale)) await this.deleteEntry(e);
    const uids = new Set(owned.flatMap((e) => (e.uid && !stale.includes(e) ? [e.uid] : [])));
    this.opts.onApplied?.(ref, sent.length > 0, uids, state);
    return sent;
  }

  /** Applies (or skips) one object; returns its generation afterwards and whether it was sent. */
  private async applyObject(ref: ResourceRef, obj: ManifestObject, force: boolean, appliedGeneration: number | undefined): Promise<{ generation: number | undefined; wrote: boolean }> {
    const key = objectKey(obj);
    const hash = obj.metadata.annotations[ANNOTATION.manifestHash];
    let known = this.inventory.get(key);
    if (!known) {
      const live = await this.api.get(refOf(obj)).catch((err) => {
        throw kubeError(err, refOf(obj));
      });
      if (live && !isManaged(live.metadata?.labels)) {
        throw new KubeApplyError(
          'ERR_KUBE_UNMANAGED_CONFLICT',
          `${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name} exists without ${LABEL.managedBy}=krane; refusing to take it over`,
        );
      }
      if (live) {
        this.inventory.set(live);
        known = this.inventory.get(key);
      }
    }
    // A generation past krane's last apply is a spec change by someone else, even one no
    // managedFields entry shows (the scale subresource's).
    const moved = appliedGeneration !== undefined && known?.generation !== undefined && known.generation > appliedGeneration;
    if (!force && known && known.hash === hash && !known.touchedByOthers && !moved) {
      this.stats.skipped++;
      return { generation: known.generation, wrote: false };
    }
    try {
      return await this.send(obj);
    } catch (err) {
      const f = apiFailure(err);
      // A conflict means the object changed under krane: re-read it before the retry.
      if (f.status === 409) this.inventory.forget(key);
      if (!known || !RECREATABLE.has(obj.kind) || !isImmutableFieldChange(f)) throw kubeError(err, refOf(obj));
      return this.recreate(ref, obj, known, f.message);
    }
  }

  /** Checked before each write and delete: a krane that lost its Lease closes, and an apply or
   *  GC pass already running must not go on writing beside the new leader. */
  private fence(): void {
    if (this.closed) throw new Error('krane is stopping (or lost its lease): no further writes');
  }

  private async send(obj: ManifestObject): Promise<{ generation: number | undefined; wrote: boolean }> {
    this.fence();
    const applied = await this.api.apply(obj);
    this.inventory.set({ ...applied, apiVersion: applied.apiVersion ?? obj.apiVersion, kind: applied.kind ?? obj.kind });
    this.stats.applied++;
    return { generation: (applied as KubernetesObject).metadata?.generation, wrote: true };
  }

  /**
   * The API server refused a change to a field fixed at creation: delete the object and create
   * it anew. Its pods are orphaned when the new object selects them too (a StatefulSet adopts
   * them by name and keeps its volumes), and go with it when the selector itself changed.
   */
  private async recreate(ref: ResourceRef, obj: ManifestObject, live: InventoryEntry, why: string): Promise<{ generation: number | undefined; wrote: boolean }> {
    const current = await this.api.get(refOf(obj)).catch((err) => {
      throw kubeError(err, refOf(obj));
    });
    const sameSelector = JSON.stringify((current as { spec?: { selector?: unknown } } | undefined)?.spec?.selector) === JSON.stringify((obj.spec as { selector?: unknown } | undefined)?.selector);
    this.log.warn({ kind: obj.kind, namespace: obj.metadata.namespace, name: obj.metadata.name, why, orphanPods: sameSelector }, 'recreating object for an immutable field change');
    this.fence();
    await this.api.delete(refOf(obj), live.uid, sameSelector ? 'Orphan' : 'Background').catch((err) => {
      throw kubeError(err, refOf(obj));
    });
    this.inventory.remove(objectKey(obj));
    try {
      const r = await this.send(obj);
      this.stats.recreated++;
      this.opts.onRecreated?.(ref, why);
      return r;
    } catch (err) {
      // Still terminating (finalizers): a 409 AlreadyExists, retried like any conflict.
      throw kubeError(err, refOf(obj));
    }
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
      if (!live || !isManaged(live.metadata?.labels)) continue;
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
      if (!isManaged(e.labels)) continue;
      const resource = e.resource ?? resourceFromLabels(e.labels);
      if (!resource) {
        this.log.warn({ kind: e.kind, namespace: e.namespace, name: e.name }, 'managed object names no resource, gc leaves it');
        continue;
      }
      if (!desired.has(resource)) doomed.set(resource, [...(doomed.get(resource) ?? []), e]);
    }
    const objects = [...doomed.values()].reduce((n, list) => n + list.length, 0);
    const managed = this.inventory.all().filter((e) => isManaged(e.labels)).length;
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
    this.remembered.delete(resource);
    this.repairs.cancel(resource);
  }

  private async deleteEntry(e: InventoryEntry): Promise<void> {
    if (!isManaged(e.labels)) return;
    this.fence();
    const gone = !(await this.api.delete(e, e.uid));
    this.inventory.remove(objectKey(toObj(e)));
    if (!gone) this.stats.deleted++;
    this.log.debug({ kind: e.kind, namespace: e.namespace, name: e.name, alreadyGone: gone }, 'deleted object');
  }
}
