// ApplyController: the ResourceController (src/sync/controller.ts) that makes the cluster match
// desired states. One instance per krane. Calls for different resources run concurrently;
// calls for one resource (from the watcher or from drift repair via `observe`) queue behind
// each other, so per-resource work never interleaves.
//
// Apply: build the objects, then for each one
//   1. skip it when the inventory says the live object carries this manifest hash and nobody
//      but krane has written its spec or labels (the inventory is re-listed whenever it is
//      older than `verifyAfterMs`; krane sets that to half the resync interval, so after a
//      restart and in every periodic full sync nothing is skipped unverified, and an object
//      deleted or edited by hand is repaired by the next resync at the latest);
//   2. if the object is unknown, GET it first: an existing object without the managed-by
//      label is someone else's and is a PermanentError, never overwritten;
//   3. server-side apply with force under the `krane` field manager (a no-op on the server
//      when nothing changed). A refusal becomes a coded error as src/kube/classify.ts decides:
//      permanent for this object (report and move on) or retry later.
// Delete and GC only ever target inventory entries (listed by the managed-by label) or objects
// checked by GET to carry it, and delete with a uid precondition.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log';
import type { ResourceController } from '../sync/wire';
import { refKey, SENTINEL_NAMESPACE, WORKLOAD_NAMESPACE, type ApplyState, type ResourceRef } from '../sync/wire';
import type { KubeClient, ObjectRef } from './client';
import { KubeApplyError, kubeError } from './errors';
import { Inventory, type InventoryEntry, type ManagedKind } from './inventory';
import {
  ANNOTATION,
  buildObjects,
  deploymentObjectName,
  isManaged,
  LABEL,
  sentinelObjectName,
  type BuildOptions,
  type ManifestObject,
} from './manifests';
import { objectKey } from './manifests/types';

export function managedKinds(workloadNs = WORKLOAD_NAMESPACE, sentinelNs = SENTINEL_NAMESPACE): ManagedKind[] {
  return [
    { apiVersion: 'v1', kind: 'Service', namespace: workloadNs },
    { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: workloadNs },
    { apiVersion: 'v1', kind: 'Service', namespace: sentinelNs },
    { apiVersion: 'apps/v1', kind: 'Deployment', namespace: sentinelNs },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', namespace: sentinelNs },
    { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', namespace: sentinelNs },
  ];
}

/** Workloads go first on delete so their pods stop before the Service that names them goes. */
const DELETE_ORDER: Record<string, number> = { StatefulSet: 0, Deployment: 0, PodDisruptionBudget: 1, CiliumNetworkPolicy: 1, Service: 2 };

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
   * skipped as unchanged). krane uses it to clear an earlier apply-failure report.
   */
  onApplied?(ref: ResourceRef, wrote: boolean): void;
  /** After every successful delete of a resource's objects (clears an earlier failure report). */
  onDeleted?(ref: ResourceRef): void;
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
}

/** What krane last applied for a resource, kept to repair drift without asking ctrl. */
interface Remembered {
  ref: ResourceRef;
  state: ApplyState;
  /** Object key → generation right after krane's apply (undefined for kinds without one). */
  objects: Map<string, number | undefined>;
}

/**
 * Events for one resource within this window cause one repair: a hand-deleted StatefulSet
 * also deletes pods and changes its Service's endpoints, and one re-apply covers it all.
 */
const REPAIR_DEBOUNCE_MS = 100;

export class ApplyController implements ResourceController {
  readonly inventory: Inventory;
  readonly stats: ControllerStats = { applied: 0, skipped: 0, deleted: 0, repaired: 0 };
  private readonly remembered = new Map<string, Remembered>();
  /** Per-resource queue: the watcher and drift repair never work on one resource at once. */
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly repairs = new Map<string, NodeJS.Timeout>();
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
  }

  apply(ref: ResourceRef, state: ApplyState): Promise<void> {
    return this.serial(refKey(ref), () => this.applyNow(ref, state));
  }

  delete(ref: ResourceRef): Promise<void> {
    const key = refKey(ref);
    // Forgotten inside the lock: an apply queued before this delete must not re-remember it.
    return this.serial(key, async () => {
      this.forgetResource(key);
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
   * current, and when an object of a resource krane applied was deleted, or its spec changed
   * (generation moved past what krane's own apply produced), re-applies the last desired state.
   */
  observe(type: 'upsert' | 'delete', obj: KubernetesObject): void {
    if (!isManaged(obj.metadata?.labels)) return;
    const key = objectKey(obj);
    if (type === 'delete') this.inventory.remove(key);
    else this.inventory.set(obj);
    const resource = obj.metadata?.annotations?.[ANNOTATION.resource];
    const r = resource ? this.remembered.get(resource) : undefined;
    if (!r || !r.objects.has(key)) return;
    const appliedGeneration = r.objects.get(key);
    const generation = obj.metadata?.generation;
    const drifted = type === 'delete' || (generation !== undefined && appliedGeneration !== undefined && generation > appliedGeneration);
    if (drifted) this.scheduleRepair(resource!);
  }

  private scheduleRepair(resource: string): void {
    if (this.closed || this.repairs.has(resource)) return;
    this.repairs.set(
      resource,
      setTimeout(() => {
        this.repairs.delete(resource);
        void this.serial(resource, async () => {
          const r = this.remembered.get(resource);
          if (!r || this.closed) return;
          const before = this.stats.applied;
          // What the event showed is newer than any skip decision: verify each object again.
          for (const key of r.objects.keys()) this.inventory.forget(key);
          await this.applyNow(r.ref, r.state);
          if (this.stats.applied > before) {
            this.stats.repaired++;
            this.log.info({ resource, objects: this.stats.applied - before }, 'repaired drifted resource');
          }
        }).catch((err) => this.log.warn({ resource, err: (err as Error).message }, 'drift repair failed, next resync retries'));
      }, REPAIR_DEBOUNCE_MS),
    );
  }

  /** Stops scheduling repairs (shutdown). */
  close(): void {
    this.closed = true;
    for (const t of this.repairs.values()) clearTimeout(t);
    this.repairs.clear();
  }

  private async applyNow(ref: ResourceRef, state: ApplyState): Promise<void> {
    if (state.region !== this.opts.region || ref.region !== this.opts.region) {
      throw new KubeApplyError('ERR_KUBE_WRONG_REGION', `desired state for region ${state.region} sent to krane of ${this.opts.region}`);
    }
    // Objects outside the namespaces krane lists would be invisible to the inventory and GC.
    const namespace = state.kind === 'deployment' ? this.workloadNs : this.sentinelNs;
    if (state.namespace !== namespace) {
      throw new KubeApplyError('ERR_KUBE_WRONG_NAMESPACE', `${state.kind} objects belong in namespace ${namespace}, not ${state.namespace}`);
    }
    const objects = buildObjects(state, this.opts.build);
    await this.inventory.ensureFresh();
    let wrote = false;
    const generations = new Map<string, number | undefined>();
    for (const obj of objects) {
      const r = await this.applyObject(obj);
      generations.set(objectKey(obj), r.generation);
      wrote ||= r.wrote;
    }
    this.remembered.set(refKey(ref), { ref, state, objects: generations });
    // Objects this resource had before but no longer needs (e.g. an environment's gossip objects
    // after an environment move) go now rather than waiting for the next GC.
    const wanted = new Set(objects.map(objectKey));
    const stale = this.inventory.byResource(refKey(ref)).filter((e) => !wanted.has(objectKey(toObj(e))));
    for (const e of sortForDelete(stale)) await this.deleteEntry(e);
    this.opts.onApplied?.(ref, wrote);
  }

  /** Applies (or skips) one object; returns its generation afterwards and whether it was sent. */
  private async applyObject(obj: ManifestObject): Promise<{ generation: number | undefined; wrote: boolean }> {
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
    if (known && known.hash === hash && !known.touchedByOthers) {
      this.stats.skipped++;
      return { generation: known.generation, wrote: false };
    }
    try {
      const applied = await this.api.apply(obj);
      this.inventory.set({ ...applied, apiVersion: applied.apiVersion ?? obj.apiVersion, kind: applied.kind ?? obj.kind });
      this.stats.applied++;
      return { generation: (applied as KubernetesObject).metadata?.generation, wrote: true };
    } catch (err) {
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
    for (const r of this.expectedObjects(ref)) {
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
    for (const key of this.remembered.keys()) if (!desired.has(key) && !doomed.has(key)) this.forgetResource(key);
    // One resource's objects go in order under its lock (so a queued drift repair cannot bring
    // them back); different resources go in parallel.
    const groups = [...doomed.entries()];
    const limit = this.opts.gcConcurrency ?? DEFAULT_GC_CONCURRENCY;
    let next = 0;
    let deleted = 0;
    const errors: unknown[] = [];
    const worker = async () => {
      while (next < groups.length) {
        const [resource, entries] = groups[next++]!;
        await this.serial(resource, async () => {
          this.forgetResource(resource);
          for (const e of sortForDelete(entries)) {
            try {
              await this.deleteEntry(e);
              deleted++;
            } catch (err) {
              errors.push(err);
            }
          }
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, groups.length) }, worker));
    this.log.info({ resources: groups.length, deleted, failed: errors.length, kept: this.inventory.all().length }, 'gc done');
    if (errors.length) throw new AggregateError(errors, `gc failed to delete ${errors.length} objects`);
  }

  /** Krane no longer wants the resource: no drift repair may bring it back. */
  private forgetResource(resource: string): void {
    this.remembered.delete(resource);
    const t = this.repairs.get(resource);
    if (t) clearTimeout(t);
    this.repairs.delete(resource);
  }


  private async deleteEntry(e: InventoryEntry): Promise<void> {
    if (!isManaged(e.labels)) return;
    const gone = !(await this.api.delete(e, e.uid));
    this.inventory.remove(objectKey(toObj(e)));
    if (!gone) this.stats.deleted++;
    this.log.debug({ kind: e.kind, namespace: e.namespace, name: e.name, alreadyGone: gone }, 'deleted object');
  }

  private expectedObjects(ref: ResourceRef): ObjectRef[] {
    if (ref.type === 'deployment_topology') {
      const name = deploymentObjectName(ref.id);
      return [
        { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: this.workloadNs, name },
        { apiVersion: 'v1', kind: 'Service', namespace: this.workloadNs, name },
      ];
    }
    if (ref.type === 'sentinel') {
      const name = sentinelObjectName(ref.id);
      return [
        { apiVersion: 'apps/v1', kind: 'Deployment', namespace: this.sentinelNs, name },
        { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', namespace: this.sentinelNs, name },
        { apiVersion: 'v1', kind: 'Service', namespace: this.sentinelNs, name },
      ];
    }
    // Gossip objects are named by environment, which a bare ref does not carry: inventory only.
    return [];
  }
}

function refOf(o: ManifestObject): ObjectRef {
  return { apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name };
}

function toObj(r: ObjectRef) {
  return { apiVersion: r.apiVersion, kind: r.kind, metadata: { name: r.name, namespace: r.namespace } };
}

function sortForDelete<T extends ObjectRef>(list: T[]): T[] {
  return [...list].sort((a, b) => (DELETE_ORDER[a.kind] ?? 1) - (DELETE_ORDER[b.kind] ?? 1));
}

/** Fallback for managed objects missing the resource annotation (e.g. edited by hand). */
function resourceFromLabels(labels: Record<string, string>): string | undefined {
  if (labels[LABEL.deploymentId]) return refKey({ type: 'deployment_topology', id: labels[LABEL.deploymentId]! });
  if (labels[LABEL.sentinelId]) return refKey({ type: 'sentinel', id: labels[LABEL.sentinelId]! });
  return undefined;
}
