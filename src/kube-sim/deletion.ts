// Deletion as the API server and its garbage collector carry it out: preconditions, objects
// held by finalizers (marked with deletionTimestamp, removed when the last finalizer goes),
// owner-reference cascades (Background/Foreground remove dependents, Orphan releases them),
// and namespace teardown (the namespace turns Terminating, its content is deleted, and the
// namespace goes once nothing is left in it). Every deletion is written to the audit log.
import type { Actor, DeletionAudit } from './audit';
import type { ObjectStore } from './object-store';
import { apiVersionOf, mustResourceForKind, RESOURCES, type ResourceDef } from './resources';
import { conflictError, notFoundError } from './status';
import type { KubeObject } from './types';

export type PropagationPolicy = 'Orphan' | 'Background' | 'Foreground';

export interface DeleteOptions {
  propagationPolicy?: PropagationPolicy;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
  /** Who asked (for the audit log); API requests when absent. */
  actor?: Actor;
}

const NAMESPACE = mustResourceForKind('v1', 'Namespace');

const nowIso = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

export class Deleter {
  constructor(
    private readonly store: ObjectStore,
    private readonly audit: DeletionAudit,
  ) {}

  delete(def: ResourceDef, ns: string, name: string, opts: DeleteOptions = {}): KubeObject {
    const obj = this.store.get(def, ns, name);
    if (!obj) throw notFoundError(def, name);
    const pre = opts.preconditions;
    if (pre?.uid && pre.uid !== obj.metadata.uid) {
      throw conflictError(def, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${obj.metadata.uid}`);
    }
    if (pre?.resourceVersion && pre.resourceVersion !== obj.metadata.resourceVersion) {
      throw conflictError(def, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${obj.metadata.resourceVersion}`);
    }
    if (opts.dryRun) return obj;
    const actor = opts.actor ?? { cause: 'request' as const };
    if (def === NAMESPACE) return this.terminateNamespace(obj, actor);
    if (obj.metadata.finalizers?.length) {
      // Finalizers hold the object: it is marked for deletion and goes when the last one is
      // removed (see release), like the API server's graceful path.
      if (obj.metadata.deletionTimestamp) return obj;
      this.audit.record(obj, actor, { propagationPolicy: opts.propagationPolicy, held: true });
      return this.store.put(def, { ...obj, metadata: { ...obj.metadata, deletionTimestamp: nowIso(), deletionGracePeriodSeconds: 0 } });
    }
    this.audit.record(obj, actor, { propagationPolicy: opts.propagationPolicy });
    return this.removeWithDependents(def, ns, name, opts.propagationPolicy ?? 'Background', actor)!;
  }

  /** Deletes each of `items` (already selected by the caller); returns those deleted. */
  deleteCollection(def: ResourceDef, items: KubeObject[], opts: DeleteOptions = {}): KubeObject[] {
    if (opts.dryRun) return items;
    const out: KubeObject[] = [];
    const actor = opts.actor ?? { cause: 'collection' as const };
    for (const o of items) {
      try {
        out.push(this.delete(def, o.metadata.namespace ?? '', o.metadata.name!, { ...opts, actor }));
      } catch {
        // Gone meanwhile (a cascade of an earlier item): nothing to do.
      }
    }
    return out;
  }

  /**
   * Called after a write: an object marked for deletion whose finalizers are all gone is
   * removed now. Returns the removed object, or undefined when it stays.
   */
  release(def: ResourceDef, stored: KubeObject): KubeObject | undefined {
    if (def === NAMESPACE || !stored.metadata.deletionTimestamp || stored.metadata.finalizers?.length) return undefined;
    return this.removeWithDependents(def, stored.metadata.namespace ?? '', stored.metadata.name!, 'Background', { cause: 'request' });
  }

  private removeWithDependents(def: ResourceDef, ns: string, name: string, policy: PropagationPolicy, actor: Actor): KubeObject | undefined {
    const gone = this.store.remove(def, ns, name);
    if (!gone) return undefined;
    const uid = gone.metadata.uid!;
    const owner = { kind: gone.kind, name: gone.metadata.name!, uid };
    for (const dep of this.store.dependentsOf(uid)) {
      const d = this.store.get(dep.def, dep.ns, dep.name);
      if (!d) continue;
      const otherOwnersAlive = (d.metadata.ownerReferences ?? []).some((ref) => ref.uid !== uid && this.ownerExists(ref, dep.ns));
      if (policy === 'Orphan' || otherOwnersAlive) {
        const refs = (d.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
        this.store.put(dep.def, { ...d, metadata: { ...d.metadata, ownerReferences: refs.length > 0 ? refs : undefined } });
      } else {
        this.delete(dep.def, dep.ns, dep.name, { propagationPolicy: policy, actor: { ...actor, cause: 'cascade', owner } });
      }
    }
    if (def.namespaced) this.finishNamespace(ns);
    return gone;
  }

  private ownerExists(ref: { apiVersion: string; kind: string; name: string; uid: string }, ns: string): boolean {
    const def = RESOURCES.find((r) => r.kind === ref.kind && apiVersionOf(r) === ref.apiVersion);
    if (!def) return false;
    return this.store.get(def, ns, ref.name)?.metadata.uid === ref.uid;
  }

  /** The namespace turns Terminating, its content is deleted; it goes once it is empty. */
  private terminateNamespace(nsObj: KubeObject, actor: Actor): KubeObject {
    const name = nsObj.metadata.name!;
    if (nsObj.metadata.deletionTimestamp) return nsObj;
    this.audit.record(nsObj, actor);
    const marked = this.store.put(NAMESPACE, {
      ...nsObj,
      metadata: { ...nsObj.metadata, deletionTimestamp: nowIso(), deletionGracePeriodSeconds: 0 },
      status: { ...(nsObj.status ?? {}), phase: 'Terminating' },
    });
    for (const r of RESOURCES) {
      if (!r.namespaced) continue;
      for (const o of this.store.list(r, name)) {
        if (this.store.get(r, name, o.metadata.name!) === undefined) continue;
        try {
          this.delete(r, name, o.metadata.name!, { propagationPolicy: 'Background', actor: { ...actor, cause: 'namespace' } });
        } catch {
          // Removed by an earlier cascade.
        }
      }
    }
    return this.finishNamespace(name) ?? marked;
  }

  /** Removes a Terminating namespace that has nothing left in it. */
  private finishNamespace(ns: string): KubeObject | undefined {
    const nsObj = this.store.get(NAMESPACE, '', ns);
    if (!nsObj?.metadata.deletionTimestamp) return undefined;
    for (const r of RESOURCES) if (r.namespaced && this.store.countIn(r, ns) > 0) return undefined;
    return this.store.remove(NAMESPACE, '', ns);
  }
}
