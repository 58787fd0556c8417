// What krane knows about its own objects in the cluster: one entry per object of krane's
// (src/kube/ownership.ts: its label or krane's apply entry; listed per managed kind and
// namespace, or seen in an apply response). Controllers use it to skip applies
// whose manifest hash the live object already carries, to find a resource's objects for delete,
// and as the candidate set for GC. Loading is single-flight; entries are replaced wholesale on
// every full list, so anything deleted behind krane's back drops out.
import type { KubernetesObject } from '@kubernetes/client-node';
import { FIELD_MANAGER, isKindUnavailable, type KubeClient, type ObjectRef } from './client';
import { bodyDigest } from './drift-check';
import { ANNOTATION } from './manifests';
import { objectKey } from './manifests/types';
import { isKranes } from './ownership';

export interface InventoryEntry extends ObjectRef {
  uid?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** refKey of the resource the object belongs to (annotation), if present. */
  resource?: string;
  /** Manifest hash krane last applied (annotation). */
  hash?: string;
  /**
   * True when a manager other than krane has written to the object's main resource (not just
   * its status): someone may have changed fields krane owns, so the next apply must be sent.
   */
  touchedByOthers: boolean;
  /** metadata.generation: bumped by the API server on every spec change, whoever made it. */
  generation?: number;
  /** Whether it is krane's (src/kube/ownership.ts): only such entries are ever deleted. */
  owned: boolean;
  /** bodyDigest (src/kube/drift-check.ts): the body without spec.replicas. */
  digest: string;
  /** spec.replicas, for kinds that have it. */
  replicas?: number;
}

/** Kinds and namespaces krane writes; listing these is a complete inventory. */
export interface ManagedKind {
  apiVersion: string;
  kind: string;
  namespace: string;
}

/**
 * Whether a managedFields entry claims anything krane sets: the spec or the labels. Controllers
 * that only stamp annotations (the Deployment controller's revision) do not make an object drift.
 */
function ownsDesiredFields(fields: unknown): boolean {
  const f = fields as Record<string, Record<string, unknown> | undefined> | undefined;
  if (!f) return true;
  return 'f:spec' in f || Boolean(f['f:metadata'] && 'f:labels' in f['f:metadata']);
}

export function entryFrom(o: KubernetesObject): InventoryEntry {
  const md = o.metadata ?? {};
  const annotations = md.annotations ?? {};
  return {
    apiVersion: o.apiVersion!,
    kind: o.kind!,
    namespace: md.namespace ?? '',
    name: md.name ?? '',
    uid: md.uid,
    labels: md.labels ?? {},
    annotations,
    resource: annotations[ANNOTATION.resource],
    hash: annotations[ANNOTATION.manifestHash],
    generation: md.generation,
    owned: isKranes(o),
    digest: bodyDigest(o),
    replicas: (o as { spec?: { replicas?: number } }).spec?.replicas,
    touchedByOthers: (md.managedFields ?? []).some((m) => m.manager !== FIELD_MANAGER && (m.subresource ?? '') === '' && ownsDesiredFields(m.fieldsV1)),
  };
}

export class Inventory {
  private entries = new Map<string, InventoryEntry>();
  /**
   * Object keys by the resource they belong to. Every apply asks for its resource's objects; a
   * scan of every entry made that quadratic: with 5,000 sentinels (30,000 objects) a full sync
   * spent seconds in it and stalled krane past its Lease's renew deadline.
   */
  private keysByResource = new Map<string, Set<string>>();
  private loadedAt = -Infinity;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly api: KubeClient,
    private readonly kinds: readonly ManagedKind[],
    /** How long a full list is trusted before the next apply re-lists (the resync interval). */
    private readonly maxAgeMs: number,
  ) {}

  /** Lists everything unless a full list younger than maxAgeMs exists (or `force`). */
  async ensureFresh(force = false): Promise<void> {
    if (!force && Date.now() - this.loadedAt < this.maxAgeMs) return;
    if (this.loading) return this.loading;
    this.loading = (async () => {
      const started = Date.now();
      const next = new Map<string, InventoryEntry>();
      const lists = await Promise.all(
        this.kinds.map((k) =>
          // No label selector: an object of krane's that lost its label is still krane's.
          this.api.list(k.apiVersion, k.kind, k.namespace).catch((err) => {
            // A kind the cluster does not serve has no objects; applies of it fail on their own.
            if (isKindUnavailable(err)) return { items: [] };
            throw err;
          }),
        ),
      );
      for (const l of lists) for (const o of l.items) if (isKranes(o)) next.set(objectKey(o), entryFrom(o));
      this.entries = next;
      this.keysByResource = new Map();
      for (const [key, e] of next) this.index(key, e.resource);
      this.loadedAt = started;
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  get(key: string): InventoryEntry | undefined {
    return this.entries.get(key);
  }

  /** An object's uid as known: null when known absent, undefined before any full list (an
   *  absent entry then says nothing). */
  uidOf(key: string): string | null | undefined {
    return this.loadedAt === -Infinity ? undefined : (this.entries.get(key)?.uid ?? null);
  }

  set(o: KubernetesObject): void {
    const key = objectKey(o);
    const e = entryFrom(o);
    const was = this.entries.get(key)?.resource;
    if (was !== e.resource) this.unindex(key, was);
    this.entries.set(key, e);
    this.index(key, e.resource);
  }

  /** Drops what is known about one object, so the next apply checks it with a GET. */
  forget(key: string): void {
    this.remove(key);
  }

  remove(key: string): void {
    this.unindex(key, this.entries.get(key)?.resource);
    this.entries.delete(key);
  }

  private index(key: string, resource: string | undefined): void {
    if (resource === undefined) return;
    let keys = this.keysByResource.get(resource);
    if (!keys) this.keysByResource.set(resource, (keys = new Set()));
    keys.add(key);
  }

  private unindex(key: string, resource: string | undefined): void {
    if (resource === undefined) return;
    const keys = this.keysByResource.get(resource);
    keys?.delete(key);
    if (keys?.size === 0) this.keysByResource.delete(resource);
  }

  /** Forgets the last full list, so the next ensureFresh lists again (used after a restart-like event). */
  invalidate(): void {
    this.loadedAt = -Infinity;
  }

  byResource(resource: string): InventoryEntry[] {
    return [...(this.keysByResource.get(resource) ?? [])].map((k) => this.entries.get(k)!);
  }

  all(): InventoryEntry[] {
    return [...this.entries.values()];
  }
}
