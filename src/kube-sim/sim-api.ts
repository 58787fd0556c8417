// SimApi: the API verbs over the store: create, get, list, replace, patch (JSON, merge,
// strategic, server-side apply), status and scale writes, and deletion (deletion.ts).
// HTTP-independent, so the built-in controllers drive the same code paths as clients. Every
// write goes through one pipeline: admission (admission.ts), server metadata, defaults,
// status kept from the stored object, generation bump on spec change, validation (422), field
// ownership, the stored-size limit, and a no-op check that returns the stored object
// untouched (no new resourceVersion, no watch event) when nothing changed.
import { randomUUID } from 'node:crypto';
import { admitCreate, admitObjectUpdate, admitStoredSize, admitUpdate } from './admission';
import type { DeletionAudit } from './audit';
import { applyDefaults, initialStatus } from './defaults';
import { Deleter, type DeleteOptions } from './deletion';
import { ApplyConflict, applyConflictMessage, serverSideApply, updateOwnership } from './fields';
import { deepEqual, jsonPatch, mergePatch, strategicMerge } from './merge';
import type { ObjectStore } from './object-store';
import { apiVersionOf, mustResourceForKind, type ResourceDef } from './resources';
import { applyScale, scaleCauses, toScale } from './scale';
import { matchFields, matchLabels, parseFieldSelector, parseLabelSelector } from './selectors';
import { alreadyExists, applyConflictError, badRequest, conflictError, invalidError, notFoundError, SimError } from './status';
import type { KubeObject } from './types';
import { validateObject } from './validate';
import { nowIso, randomSuffix } from './workloads/util';

export type { DeleteOptions } from './deletion';

export interface WriteOptions {
  fieldManager?: string;
  dryRun?: boolean;
  force?: boolean;
}

export interface WriteResult {
  object: KubeObject;
  /** False when the write changed nothing (no resourceVersion bump, no event). */
  changed: boolean;
  created: boolean;
  /** Admission's warnings (Pod Security's warn level), for the response's Warning headers. */
  warnings?: string[];
}

const withWarnings = (r: WriteResult, warnings: string[]): WriteResult => (warnings.length ? { ...r, warnings } : r);

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
}

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/** Manager recorded for writes that do not name one (the API server uses the user agent). */
const DEFAULT_MANAGER = 'unknown';

const isMap = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Everything but metadata and status: what a generation bump tracks. */
function specOf(obj: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

const withoutRv = (o: KubeObject): KubeObject => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });

export class SimApi {
  private nextServiceIp = 1;
  private readonly deleter: Deleter;

  constructor(
    private readonly store: ObjectStore,
    audit: DeletionAudit,
  ) {
    this.deleter = new Deleter(store, audit);
  }

  get currentResourceVersion(): string {
    return String(this.store.resourceVersion);
  }

  get(def: ResourceDef, ns: string, name: string): KubeObject {
    const obj = this.store.get(def, ns, name);
    if (!obj) throw notFoundError(def, name);
    return obj;
  }

  tryGet(def: ResourceDef, ns: string, name: string): KubeObject | undefined {
    return this.store.get(def, ns, name);
  }

  list(def: ResourceDef, ns: string | undefined, opts: ListOptions = {}): ListResult {
    const labels = parseLabelSelector(opts.labelSelector);
    const fields = parseFieldSelector(opts.fieldSelector, def.kind);
    let items = this.store.list(def, ns);
    if (labels.length > 0 || fields.length > 0) {
      items = items.filter((o) => matchLabels(labels, o.metadata.labels) && matchFields(fields, o));
    }
    const resourceVersion = this.currentResourceVersion;
    if (opts.continue) {
      let after: string;
      try {
        after = String(JSON.parse(Buffer.from(opts.continue, 'base64url').toString('utf8')).after);
      } catch {
        throw badRequest('invalid continue token');
      }
      items = items.filter((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}` > after);
    }
    if (opts.limit && opts.limit > 0 && items.length > opts.limit) {
      const page = items.slice(0, opts.limit);
      const last = page[page.length - 1]!;
      const token = Buffer.from(JSON.stringify({ after: `${last.metadata.namespace ?? ''}/${last.metadata.name}` })).toString('base64url');
      return { items: page, resourceVersion, continue: token };
    }
    return { items, resourceVersion };
  }

  create(def: ResourceDef, ns: string, body: unknown, opts: WriteOptions = {}): WriteResult {
    const incoming = this.checkBody(def, ns, body, undefined);
    if (!incoming.metadata.name && incoming.metadata.generateName) {
      incoming.metadata.name = incoming.metadata.generateName + randomSuffix();
    }
    const name = incoming.metadata.name ?? '';
    const warnings = admitCreate(this.store, def, ns, name, incoming);
    if (name && this.store.get(def, ns, name)) throw alreadyExists(def, name);
    const obj = this.finalize(def, ns, incoming, undefined);
    obj.metadata.managedFields = updateOwnership(undefined, obj, opts.fieldManager ?? DEFAULT_MANAGER, nowIso(), 'main');
    return withWarnings(this.commit(def, obj, undefined, opts), warnings);
  }

  replace(def: ResourceDef, ns: string, name: string, body: unknown, opts: WriteOptions = {}): WriteResult {
    const incoming = this.checkBody(def, ns, body, name);
    const old = this.get(def, ns, name);
    admitUpdate(def, name, incoming.metadata.resourceVersion);
    this.checkPrecondition(def, old, incoming.metadata.resourceVersion);
    const obj = this.finalize(def, ns, incoming, old);
    const warnings = admitObjectUpdate(this.store, def, obj, old);
    obj.metadata.managedFields = updateOwnership(old, obj, opts.fieldManager ?? DEFAULT_MANAGER, nowIso(), 'main');
    return withWarnings(this.commit(def, obj, old, opts), warnings);
  }

  patch(def: ResourceDef, ns: string, name: string, contentType: string, body: unknown, opts: WriteOptions = {}): WriteResult {
    if (contentType === PATCH_TYPES.apply) return this.apply(def, ns, name, body, opts);
    const old = this.get(def, ns, name);
    const patched = this.patchDocument(def, old, contentType, body);
    const incoming = this.checkBody(def, ns, patched, name);
    if (isMap(body) && isMap(body.metadata) && typeof body.metadata.resourceVersion === 'string') {
      this.checkPrecondition(def, old, body.metadata.resourceVersion);
    }
    const obj = this.finalize(def, ns, incoming, old);
    const warnings = admitObjectUpdate(this.store, def, obj, old);
    obj.metadata.managedFields = updateOwnership(old, obj, opts.fieldManager ?? DEFAULT_MANAGER, nowIso(), 'main');
    return withWarnings(this.commit(def, obj, old, opts), warnings);
  }

  /** Server-side apply: creates when missing, merges and tracks ownership when present. */
  apply(def: ResourceDef, ns: string, name: string, body: unknown, opts: WriteOptions = {}): WriteResult {
    if (!opts.fieldManager) throw badRequest('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
    const applied = this.checkBody(def, ns, body, name);
    if (!applied.metadata.name) throw badRequest('metadata.name is required for apply');
    const old = this.store.get(def, ns, name);
    let warnings = old ? [] : admitCreate(this.store, def, ns, name, applied);
    if (old && applied.metadata.resourceVersion) this.checkPrecondition(def, old, applied.metadata.resourceVersion);
    let result;
    try {
      result = serverSideApply(old, applied, opts.fieldManager, opts.force === true, nowIso());
    } catch (err) {
      if (err instanceof ApplyConflict) throw applyConflictError(applyConflictMessage(err.causes), err.causes);
      throw err;
    }
    const obj = this.finalize(def, ns, result.object, old);
    if (old) warnings = admitObjectUpdate(this.store, def, obj, old);
    obj.metadata.managedFields = result.managedFields;
    return withWarnings(this.commit(def, obj, old, opts), warnings);
  }

  /** PUT /status: replaces only the status. */
  replaceStatus(def: ResourceDef, ns: string, name: string, body: unknown, opts: WriteOptions = {}): WriteResult {
    const incoming = this.checkBody(def, ns, body, name);
    const old = this.get(def, ns, name);
    this.checkPrecondition(def, old, incoming.metadata.resourceVersion);
    return this.writeStatus(def, old, incoming.status, opts);
  }

  /** PATCH /status: the patch is applied to the whole object and only the status is kept. */
  patchStatus(def: ResourceDef, ns: string, name: string, contentType: string, body: unknown, opts: WriteOptions = {}): WriteResult {
    const old = this.get(def, ns, name);
    const patched = contentType === PATCH_TYPES.apply
      ? (strategicMerge(old, body, false) as KubeObject)
      : this.patchDocument(def, old, contentType, body);
    return this.writeStatus(def, old, (patched as KubeObject).status, opts);
  }

  /** Status write by the built-in controller: no ownership tracking, no event when unchanged. */
  setStatus(def: ResourceDef, ns: string, name: string, status: unknown): WriteResult | undefined {
    const old = this.store.get(def, ns, name);
    if (!old) return undefined;
    if (deepEqual(old.status, status)) return { object: old, changed: false, created: false };
    return { object: this.store.put(def, { ...old, status }), changed: true, created: false };
  }

  /**
   * The scheduler's binding of a pod to a node (what POST pods/NAME/binding does): spec.nodeName
   * set once, with the PodScheduled=True condition, never through the pod's own verbs.
   * Undefined when the pod is gone or already bound.
   */
  bindPod(ns: string, name: string, nodeName: string): WriteResult | undefined {
    const def = mustResourceForKind('v1', 'Pod');
    const old = this.store.get(def, ns, name);
    if (!old || old.spec?.nodeName) return undefined;
    const others = ((old.status?.conditions ?? []) as { type: string }[]).filter((c) => c.type !== 'PodScheduled');
    const status = { ...old.status, conditions: [...others, { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: nowIso() }] };
    return { object: this.store.put(def, { ...old, spec: { ...old.spec, nodeName }, status }), changed: true, created: false };
  }

  delete(def: ResourceDef, ns: string, name: string, opts: DeleteOptions = {}): KubeObject {
    return this.deleter.delete(def, ns, name, opts);
  }

  deleteCollection(def: ResourceDef, ns: string | undefined, opts: ListOptions & DeleteOptions = {}): KubeObject[] {
    const { items } = this.list(def, ns, { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
    return this.deleter.deleteCollection(def, items, opts);
  }

  /** GET /scale: the workload's replicas as an autoscaling/v1 Scale. */
  getScale(def: ResourceDef, ns: string, name: string): KubeObject {
    if (!def.scalable) throw notFoundError(def, `${name}/scale`);
    return toScale(this.get(def, ns, name));
  }

  /** PUT or PATCH /scale: `scale` is the new Scale; only spec.replicas reaches the workload. */
  writeScale(def: ResourceDef, ns: string, name: string, scale: KubeObject, opts: WriteOptions = {}): WriteResult {
    const old = this.get(def, ns, name);
    if (!def.scalable) throw notFoundError(def, `${name}/scale`);
    const causes = scaleCauses(scale);
    if (causes.length > 0) throw invalidError({ ...def, kind: 'Scale', group: 'autoscaling' }, name, causes);
    this.checkPrecondition(def, old, scale.metadata?.resourceVersion);
    const obj = this.finalize(def, ns, applyScale(old, scale), old);
    obj.metadata.managedFields = updateOwnership(old, obj, opts.fieldManager ?? DEFAULT_MANAGER, nowIso(), 'main', 'scale');
    const r = this.commit(def, obj, old, opts);
    return { ...r, object: toScale(r.object) };
  }

  /** The patched Scale for PATCH /scale (merge, strategic or JSON patch of the Scale view). */
  patchedScale(def: ResourceDef, ns: string, name: string, contentType: string, body: unknown): KubeObject {
    return this.patchDocument(def, this.getScale(def, ns, name), contentType, body);
  }

  private patchDocument(def: ResourceDef, old: KubeObject, contentType: string, body: unknown): KubeObject {
    switch (contentType) {
      case PATCH_TYPES.json:
        return jsonPatch(old, body) as KubeObject;
      case PATCH_TYPES.merge:
        return mergePatch(old, body) as KubeObject;
      case PATCH_TYPES.strategic:
        if (def.group === 'cilium.io') {
          throw new SimError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`);
        }
        return strategicMerge(old, body, true) as KubeObject;
      default:
        throw new SimError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${Object.values(PATCH_TYPES).join(', ')}`);
    }
  }

  private writeStatus(def: ResourceDef, old: KubeObject, status: unknown, opts: WriteOptions): WriteResult {
    if (!def.hasStatus) throw notFoundError(def, `${old.metadata.name}/status`);
    const obj: KubeObject = { ...structuredClone(old), status: structuredClone(status) };
    obj.metadata.managedFields = updateOwnership(old, obj, opts.fieldManager ?? DEFAULT_MANAGER, nowIso(), 'status');
    const causes = validateObject(obj, old);
    if (causes.length > 0) throw invalidError(def, old.metadata.name!, causes);
    return this.commit(def, obj, old, opts);
  }

  private commit(def: ResourceDef, obj: KubeObject, old: KubeObject | undefined, opts: WriteOptions): WriteResult {
    if (old && deepEqual(withoutRv(obj), withoutRv(old))) return { object: old, changed: false, created: false };
    admitStoredSize(obj);
    if (opts.dryRun) return { object: { ...obj, metadata: { ...obj.metadata, resourceVersion: old?.metadata.resourceVersion } }, changed: false, created: !old };
    const stored = this.store.put(def, obj);
    const gone = this.deleter.release(def, stored);
    if (gone) return { object: gone, changed: true, created: false };
    return { object: stored, changed: true, created: !old };
  }

  /** Normalises a request body: a JSON object of this kind whose name/namespace fit the URL. */
  private checkBody(def: ResourceDef, ns: string, body: unknown, name: string | undefined): KubeObject {
    if (!isMap(body)) throw badRequest('the request body must be a JSON object');
    const obj = structuredClone(body) as KubeObject;
    const apiVersion = apiVersionOf(def);
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersion) {
      throw badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersion})`);
    }
    if (obj.kind !== undefined && obj.kind !== def.kind) {
      throw badRequest(`the kind in the data (${obj.kind}) does not match the expected kind (${def.kind})`);
    }
    obj.apiVersion = apiVersion;
    obj.kind = def.kind;
    obj.metadata = isMap(obj.metadata) ? obj.metadata : {};
    if (def.namespaced) {
      if (obj.metadata.namespace && obj.metadata.namespace !== ns) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      obj.metadata.namespace = ns;
    } else delete obj.metadata.namespace;
    if (name !== undefined) {
      if (obj.metadata.name && obj.metadata.name !== name) {
        throw badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`);
      }
      obj.metadata.name = name;
    }
    return obj;
  }

  private checkPrecondition(def: ResourceDef, old: KubeObject, rv: string | undefined): void {
    if (rv && rv !== old.metadata.resourceVersion) {
      throw conflictError(def, old.metadata.name!, 'the object has been modified; please apply your changes to the latest version and try again');
    }
  }

  /** Server metadata, defaults, status and generation, then validation. */
  private finalize(def: ResourceDef, ns: string, incoming: KubeObject, old: KubeObject | undefined): KubeObject {
    const obj = incoming;
    const meta = obj.metadata;
    delete meta.resourceVersion;
    delete meta.managedFields;
    if (old) {
      meta.uid = old.metadata.uid;
      meta.creationTimestamp = old.metadata.creationTimestamp;
      // Only a delete sets these; clients cannot set or clear them.
      delete meta.deletionTimestamp;
      delete meta.deletionGracePeriodSeconds;
      if (old.metadata.deletionTimestamp) {
        meta.deletionTimestamp = old.metadata.deletionTimestamp;
        meta.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
      }
      if (old.metadata.generation !== undefined) meta.generation = old.metadata.generation;
    } else {
      delete meta.deletionTimestamp;
      delete meta.deletionGracePeriodSeconds;
      meta.uid = randomUUID();
      meta.creationTimestamp = nowIso();
      if (def.tracksGeneration) meta.generation = 1;
    }
    for (const k of ['labels', 'annotations', 'ownerReferences', 'finalizers'] as const) {
      if (meta[k] === null) delete meta[k];
    }
    if (def.namespaced) meta.namespace = ns;
    if (def.hasStatus) {
      if (old) obj.status = old.status;
      else {
        const s = initialStatus(obj);
        if (s === undefined) delete obj.status;
        else obj.status = s;
      }
    }
    // An update that leaves the ClusterIP out keeps the allocated one, as the API server does.
    if (old && obj.kind === 'Service' && obj.spec && !obj.spec.clusterIP && old.spec?.clusterIP) {
      obj.spec.clusterIP = old.spec.clusterIP;
      obj.spec.clusterIPs ??= old.spec.clusterIPs;
    }
    applyDefaults(obj, { allocateClusterIP: () => this.allocateClusterIP() });
    if (old && def.tracksGeneration && !deepEqual(specOf(obj), specOf(old))) {
      meta.generation = (old.metadata.generation ?? 1) + 1;
    }
    const causes = validateObject(obj, old);
    if (causes.length > 0) throw invalidError(def, meta.name ?? '', causes);
    return obj;
  }

  private allocateClusterIP(): string {
    // 10.96.0.0/12 is the default service CIDR of kubeadm clusters; 2^20 addresses is far more
    // than one simulator run allocates.
    const n = this.nextServiceIp++;
    return `10.96.${(n >> 8) & 0xff}.${n & 0xff}`;
  }
}
