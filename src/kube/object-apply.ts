// One object's apply, for ApplyController (apply-controller.ts), which orders the objects of a
// resource and serialises resources: skip it when the live object is still what krane's last
// apply left (unchanged), else server-side apply it; refuse an existing object that is not
// krane's (ownership.ts); recreate a StatefulSet or Deployment whose immutable field changed;
// raise a workload an autoscaler owns to the autoscaler's minReplicas when found below it.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log';
import type { ResourceRef } from '../sync/wire';
import { apiFailure, type KubeClient } from './client';
import { isImmutableFieldChange } from './classify';
import type { AppliedObject } from './drift-check';
import { KubeApplyError, kubeError } from './errors';
import { entryFrom, type Inventory, type InventoryEntry } from './inventory';
import { ANNOTATION, LABEL, type ManifestObject } from './manifests';
import { objectKey } from './manifests/types';
import { refOf } from './objects';
import { isKranes } from './ownership';

/** An object as krane's apply left it: what drift is judged against, and its incarnation. */
export interface AppliedEntry extends AppliedObject {
  uid?: string | undefined;
}

/** What applying one object did: `live` is the server's answer when it was sent. */
export interface ObjectResult {
  entry: AppliedEntry;
  wrote: boolean;
  live?: KubernetesObject;
  /** Whether its replicas were raised to the autoscaler's minimum. */
  raised?: boolean;
}

/** Kinds krane may delete and create again when a change to an immutable field is refused. */
const RECREATABLE = new Set(['StatefulSet', 'Deployment']);

export interface ObjectApplierDeps {
  api: KubeClient;
  inventory: Inventory;
  log: Logger;
  stats: { applied: number; skipped: number; recreated: number };
  /** Throws when krane may no longer write (stopping, or lost its Lease). */
  fence(): void;
  onRecreated?(ref: ResourceRef, why: string): void;
}

export class ObjectApplier {
  constructor(private readonly o: ObjectApplierDeps) {}

  /**
   * Applies (or skips) one object. `last`: what krane's previous apply of it left; `floor`: the
   * minReplicas of the autoscaler that owns its replicas.
   */
  async apply(ref: ResourceRef, obj: ManifestObject, force: boolean, last: AppliedEntry | undefined, floor: number | undefined): Promise<ObjectResult> {
    const key = objectKey(obj);
    const hash = obj.metadata.annotations[ANNOTATION.manifestHash];
    let known = this.o.inventory.get(key);
    if (!known) {
      const live = await this.o.api.get(refOf(obj)).catch((err) => {
        throw kubeError(err, refOf(obj));
      });
      // The incarnation krane applied is krane's even with its label and entry edited away.
      if (live && !isKranes(live) && !(last?.uid && live.metadata?.uid === last.uid)) {
        throw new KubeApplyError(
          'ERR_KUBE_UNMANAGED_CONFLICT',
          `${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name} exists without ${LABEL.managedBy}=krane and was never applied by krane; refusing to take it over`,
        );
      }
      if (live) {
        this.o.inventory.set(live);
        known = this.o.inventory.get(key);
      }
    }
    const entry = (o: { generation?: number | undefined; digest?: string | undefined; uid?: string | undefined }): AppliedEntry => ({ desired: obj, generation: o.generation, digest: o.generation === undefined ? undefined : o.digest, replicasFloor: floor, uid: o.uid });
    if (!force && known && this.unchanged(obj, known, last, floor, hash)) {
      this.o.stats.skipped++;
      return { entry: entry(known), wrote: false };
    }
    let r: { live: KubernetesObject; entry: InventoryEntry };
    try {
      r = await this.send(obj);
    } catch (err) {
      const f = apiFailure(err);
      // A conflict means the object changed under krane: re-read it before the retry.
      if (f.status === 409) this.o.inventory.forget(key);
      if (!known || !RECREATABLE.has(obj.kind) || !isImmutableFieldChange(f)) throw kubeError(err, refOf(obj));
      r = await this.recreate(ref, obj, known, f.message);
    }
    const raised = floor !== undefined && (r.entry.replicas ?? 1) < floor ? await this.raise(obj, floor) : false;
    return { entry: entry(r.entry), wrote: true, live: r.live, raised };
  }

  /**
   * Whether the live object (inventory) is still what krane's last apply left, so sending it
   * again would change nothing: the same manifest hash, no other manager on krane's fields, the
   * same body (spec.replicas aside: an autoscaler's scale is not a reason to send), krane's
   * replicas where krane sets them, and not below an autoscaler's floor.
   */
  private unchanged(obj: ManifestObject, known: InventoryEntry, last: AppliedEntry | undefined, floor: number | undefined, hash: string | undefined): boolean {
    const want = (obj.spec as { replicas?: number } | undefined)?.replicas;
    if (known.hash !== hash || known.touchedByOthers) return false;
    // A label or annotation removed by hand leaves no other manager on it: look.
    const md = obj.metadata;
    if (Object.entries(md.labels).some(([k, v]) => known.labels[k] !== v) || Object.entries(md.annotations).some(([k, v]) => known.annotations[k] !== v)) return false;
    if (want !== undefined && known.replicas !== undefined && known.replicas !== want) return false;
    if (floor !== undefined && (known.replicas ?? 1) < floor) return false;
    // A body krane's last apply did not leave is a spec change by someone else, even one no
    // managedFields entry shows.
    return last?.digest === undefined || known.generation === undefined || known.generation <= (last.generation ?? 0) || known.digest === last.digest;
  }

  /** Raises a workload an autoscaler owns to the autoscaler's minReplicas (client.ts). */
  private async raise(obj: ManifestObject, floor: number): Promise<boolean> {
    this.o.fence();
    const raised = await this.o.api.raiseReplicas(refOf(obj), floor).catch((err) => {
      throw kubeError(err, refOf(obj));
    });
    if (raised) this.o.log.info({ kind: obj.kind, namespace: obj.metadata.namespace, name: obj.metadata.name, floor }, 'raised autoscaled workload to its minimum');
    return raised;
  }

  private async send(obj: ManifestObject): Promise<{ live: KubernetesObject; entry: InventoryEntry }> {
    this.o.fence();
    const applied = await this.o.api.apply(obj);
    const live = { ...applied, apiVersion: applied.apiVersion ?? obj.apiVersion, kind: applied.kind ?? obj.kind };
    this.o.inventory.set(live);
    this.o.stats.applied++;
    return { live, entry: entryFrom(live) };
  }

  /**
   * The API server refused a change to a field fixed at creation: delete the object and create
   * it anew. Its pods are orphaned when the new object selects them too (a StatefulSet adopts
   * them by name and keeps its volumes), and go with it when the selector itself changed.
   */
  private async recreate(ref: ResourceRef, obj: ManifestObject, live: InventoryEntry, why: string): Promise<{ live: KubernetesObject; entry: InventoryEntry }> {
    const current = await this.o.api.get(refOf(obj)).catch((err) => {
      throw kubeError(err, refOf(obj));
    });
    const sameSelector = JSON.stringify((current as { spec?: { selector?: unknown } } | undefined)?.spec?.selector) === JSON.stringify((obj.spec as { selector?: unknown } | undefined)?.selector);
    this.o.log.warn({ kind: obj.kind, namespace: obj.metadata.namespace, name: obj.metadata.name, why, orphanPods: sameSelector }, 'recreating object for an immutable field change');
    this.o.fence();
    await this.o.api.delete(refOf(obj), live.uid, sameSelector ? 'Orphan' : 'Background').catch((err) => {
      throw kubeError(err, refOf(obj));
    });
    this.o.inventory.remove(objectKey(obj));
    try {
      const r = await this.send(obj);
      this.o.stats.recreated++;
      this.o.onRecreated?.(ref, why);
      return r;
    } catch (err) {
      // Still terminating (finalizers): a 409 AlreadyExists, retried like any conflict.
      throw kubeError(err, refOf(obj));
    }
  }
}
