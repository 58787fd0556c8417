// Field ownership for server-side apply. A field is named by a path of segments: `f:<name>`
// for a map key and `k:<json key>` for an item of a keyed list (containers by name, …); atomic
// lists and scalars are leaves. Each managedFields entry owns a set of paths (kept on the
// object as FieldsV1). Apply merges the applied configuration, refuses to change a field another
// manager owns with a different value unless forced, and removes fields the manager applied
// before but no longer does when nobody else owns them. Updates (create/replace/patch) give
// their manager the fields they changed.
import { deepEqual, isKeyedList, keyString, listItemKey, strategicMerge } from './merge';
import type { StatusCause } from './status';
import type { JsonObject, KubeObject, ManagedFieldsEntry } from './types';

const SEP = '\u0001';

const isMap = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** metadata fields a client may own; the rest are the server's. */
const OWNABLE_METADATA = ['labels', 'annotations', 'ownerReferences', 'finalizers'];

export type FieldScope = 'main' | 'status';

function walk(value: unknown, prefix: string, field: string, out: Map<string, unknown>): void {
  if (isMap(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined && value[k] !== null);
    if (keys.length === 0) {
      out.set(prefix, value);
      return;
    }
    for (const k of keys) walk(value[k], prefix + SEP + 'f:' + k, k, out);
    return;
  }
  if (Array.isArray(value) && isKeyedList(field, value)) {
    for (const item of value) {
      const itemPath = prefix + SEP + 'k:' + keyString(listItemKey(field, item)!);
      out.set(itemPath, ITEM);
      for (const k of Object.keys(item as object)) {
        const v = (item as any)[k];
        if (v !== undefined && v !== null) walk(v, itemPath + SEP + 'f:' + k, k, out);
      }
    }
    return;
  }
  out.set(prefix, value);
}

/** Marker value of a keyed list item's own path (the `.` of FieldsV1). */
const ITEM = Symbol('item');

/** Every owned path of `obj` with its value: the client-settable fields of the given scope. */
export function leafPaths(obj: KubeObject, scope: FieldScope): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (scope === 'status') {
    if (obj.status !== undefined) walk(obj.status, 'f:status', 'status', out);
    return out;
  }
  for (const k of OWNABLE_METADATA) {
    const v = obj.metadata?.[k];
    if (v !== undefined && v !== null) walk(v, 'f:metadata' + SEP + 'f:' + k, k, out);
  }
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'metadata' || k === 'status' || v === undefined || v === null) continue;
    walk(v, 'f:' + k, k, out);
  }
  return out;
}

export function toFieldsV1(pathsIn: Iterable<string>): JsonObject {
  const paths = [...pathsIn];
  const root: JsonObject = {};
  for (const p of paths) {
    let cur = root;
    for (const seg of p.split(SEP)) {
      cur[seg] ??= {};
      cur = cur[seg] as JsonObject;
    }
  }
  // A path that is also a prefix of others is marked with '.', as the API server does for
  // list items and maps a manager owns as a whole.
  const mark = (node: JsonObject, owned: Set<string>, prefix: string) => {
    for (const [seg, child] of Object.entries(node)) {
      const path = prefix ? prefix + SEP + seg : seg;
      const c = child as JsonObject;
      if (Object.keys(c).length > 0 && owned.has(path)) c['.'] = {};
      if (seg !== '.') mark(c, owned, path);
    }
  };
  mark(root, new Set(paths), '');
  return root;
}

const setCache = new WeakMap<object, Set<string>>();

export function fromFieldsV1(f: JsonObject): Set<string> {
  const cached = setCache.get(f);
  if (cached) return cached;
  const out = new Set<string>();
  const rec = (node: JsonObject, prefix: string) => {
    const keys = Object.keys(node);
    if (keys.length === 0) {
      if (prefix) out.add(prefix);
      return;
    }
    for (const seg of keys) {
      if (seg === '.') {
        out.add(prefix);
        continue;
      }
      rec(node[seg] as JsonObject, prefix ? prefix + SEP + seg : seg);
    }
  };
  rec(f, '');
  setCache.set(f, out);
  return out;
}

function locate(obj: any, path: string): { parent: any; slot: string | number } | undefined {
  const segs = path.split(SEP);
  let cur: any = obj;
  let field = '';
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i]!;
    let slot: string | number;
    if (seg.startsWith('f:')) {
      if (!isMap(cur)) return undefined;
      slot = seg.slice(2);
      field = slot;
    } else if (seg.startsWith('k:')) {
      if (!Array.isArray(cur)) return undefined;
      const want = seg.slice(2);
      const idx = cur.findIndex((item) => {
        const k = listItemKey(field, item);
        return k !== undefined && keyString(k) === want;
      });
      if (idx < 0) return undefined;
      slot = idx;
    } else return undefined;
    if (i === segs.length - 1) return { parent: cur, slot };
    cur = (cur as any)[slot];
  }
  return undefined;
}

export function valueAt(obj: unknown, path: string): unknown {
  const loc = locate(obj, path);
  return loc ? loc.parent[loc.slot] : undefined;
}

/** Removes the field at `path` from `obj` in place (missing fields are ignored). */
export function deletePath(obj: unknown, path: string): void {
  const loc = locate(obj, path);
  if (!loc) return;
  if (Array.isArray(loc.parent)) loc.parent.splice(loc.slot as number, 1);
  else delete loc.parent[loc.slot];
}

const entryPaths = (e: ManagedFieldsEntry) => fromFieldsV1(e.fieldsV1);

export interface ApplyResult {
  object: KubeObject;
  managedFields: ManagedFieldsEntry[];
}

/** A manager as the API server names it in conflicts: updaters with their API version. */
export function printManager(e: Pick<ManagedFieldsEntry, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  let s = JSON.stringify(e.manager);
  if (e.subresource) s += ` with subresource ${JSON.stringify(e.subresource)}`;
  return e.operation === 'Update' ? `${s} using ${e.apiVersion}` : s;
}

/**
 * The API server's conflict message: one conflict inline, several grouped by manager (sorted)
 * with one field per line.
 */
export function applyConflictMessage(causes: StatusCause[]): string {
  if (causes.length === 1) return `Apply failed with 1 conflict: ${causes[0]!.message}: ${causes[0]!.field}`;
  const byManager = new Map<string, string[]>();
  for (const c of causes) {
    const who = c.message.replace(/^conflict with /, '');
    byManager.set(who, [...(byManager.get(who) ?? []), c.field ?? '']);
  }
  const lines: string[] = [];
  for (const who of [...byManager.keys()].sort()) lines.push(`conflicts with ${who}:`, ...byManager.get(who)!.map((f) => `- ${f}`));
  return `Apply failed with ${causes.length} conflicts: ${lines.join('\n')}`;
}

export class ApplyConflict extends Error {
  constructor(readonly causes: StatusCause[]) {
    super('apply conflict');
  }
}

/** A list item's key as structured-merge-diff prints it: `name="app"`, `containerPort=80,protocol="TCP"`. */
const keyText = (json: string): string =>
  Object.entries(JSON.parse(json) as Record<string, unknown>)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',');

const pathToField = (p: string) =>
  p
    .split(SEP)
    .map((s) => (s.startsWith('f:') ? `.${s.slice(2)}` : `[${keyText(s.slice(2))}]`))
    .join('');

/**
 * Server-side apply of `applied` by `manager` over `live` (undefined to create). Returns the
 * merged object (server metadata kept from live) and the new managedFields.
 */
export function serverSideApply(
  live: KubeObject | undefined,
  applied: KubeObject,
  manager: string,
  force: boolean,
  now: string,
): ApplyResult {
  const appliedPaths = leafPaths(applied, 'main');
  const entries = live?.metadata.managedFields ?? [];
  if (!live) {
    return {
      object: applied,
      managedFields: [entry(manager, 'Apply', applied.apiVersion, now, appliedPaths.keys())],
    };
  }
  // Conflicts: fields another manager owns whose value this apply would change.
  const causes: StatusCause[] = [];
  const taken = new Map<ManagedFieldsEntry, Set<string>>();
  for (const e of entries) {
    if (e.manager === manager || e.subresource === 'status') continue;
    const owned = entryPaths(e);
    for (const [p, v] of appliedPaths) {
      if (v === ITEM || !owned.has(p)) continue;
      if (deepEqual(valueAt(live, p), v)) continue;
      causes.push({ reason: 'FieldManagerConflict', message: `conflict with ${printManager(e)}`, field: pathToField(p) });
      let s = taken.get(e);
      if (!s) taken.set(e, (s = new Set()));
      s.add(p);
    }
  }
  if (causes.length > 0 && !force) throw new ApplyConflict(causes);

  const merged = strategicMerge(structuredClone(stripServer(live)), stripServer(applied), false) as KubeObject;
  merged.metadata = { ...live.metadata, ...pickOwnable(merged.metadata) };
  if (live.status !== undefined) merged.status = live.status;

  const mine = entries.find((e) => e.manager === manager && e.operation === 'Apply' && !e.subresource);
  const previous = mine ? entryPaths(mine) : new Set<string>();
  const othersOwn = (p: string) =>
    entries.some((e) => e !== mine && e.subresource !== 'status' && entryPaths(e).has(p) && !(taken.get(e)?.has(p) ?? false));
  // Shallowest first: a removed list item goes as a whole (its key fields locate it), and its
  // own fields are then skipped.
  // A path the apply now reaches into (an empty map earlier, keys under it now) is not removed:
  // deleting it would take the new keys with it.
  const appliedKeys = [...appliedPaths.keys()];
  const appliedUnder = (p: string) => appliedKeys.some((q) => q.startsWith(p + SEP));
  const removed = [...previous].filter((p) => !appliedPaths.has(p) && !othersOwn(p) && !appliedUnder(p)).sort((a, b) => a.length - b.length);
  const gone: string[] = [];
  for (const p of removed) {
    if (gone.some((g) => p.startsWith(g + SEP))) continue;
    deletePath(merged, p);
    gone.push(p);
  }

  const next: ManagedFieldsEntry[] = [];
  for (const e of entries) {
    if (e === mine) continue;
    const lost = taken.get(e);
    if (!lost) {
      next.push(e);
      continue;
    }
    const keep = [...entryPaths(e)].filter((p) => !lost.has(p));
    if (keep.length > 0) next.push({ ...e, fieldsV1: toFieldsV1(keep) });
  }
  const appliedSet = new Set(appliedPaths.keys());
  if (mine && setsEqual(previous, appliedSet)) next.push(mine);
  else next.push(entry(manager, 'Apply', applied.apiVersion, now, appliedSet));
  return { object: merged, managedFields: orderEntries(entries, next) };
}

/** Ownership after a non-apply write: `manager` takes every field whose value changed. */
export function updateOwnership(
  before: KubeObject | undefined,
  after: KubeObject,
  manager: string,
  now: string,
  scope: FieldScope,
  /** The subresource written through (`scale`), recorded on the manager's entry. */
  via?: string,
): ManagedFieldsEntry[] {
  const entries = before?.metadata.managedFields ?? [];
  const oldLeaves = before ? leafPaths(before, scope) : new Map<string, unknown>();
  const newLeaves = leafPaths(after, scope);
  const changed = new Set<string>();
  for (const [p, v] of newLeaves) {
    if (!oldLeaves.has(p) || (v !== ITEM && !deepEqual(oldLeaves.get(p), v))) changed.add(p);
  }
  const gone = new Set([...oldLeaves.keys()].filter((p) => !newLeaves.has(p)));
  if (changed.size === 0 && gone.size === 0) return entries;
  const subresource = scope === 'status' ? 'status' : via;
  const next: ManagedFieldsEntry[] = [];
  let mine: ManagedFieldsEntry | undefined;
  for (const e of entries) {
    if (e.manager === manager && e.operation === 'Update' && e.subresource === subresource) {
      mine = e;
      continue;
    }
    const owned = entryPaths(e);
    if (![...owned].some((p) => changed.has(p) || gone.has(p))) {
      next.push(e);
      continue;
    }
    const keep = [...owned].filter((p) => !changed.has(p) && !gone.has(p));
    if (keep.length > 0) next.push({ ...e, fieldsV1: toFieldsV1(keep) });
  }
  const mineNow = new Set([...(mine ? entryPaths(mine) : []), ...changed].filter((p) => !gone.has(p)));
  if (mineNow.size > 0) {
    const e = entry(manager, 'Update', after.apiVersion, now, mineNow);
    if (subresource) e.subresource = subresource;
    next.push(e);
  }
  return orderEntries(entries, next);
}

function entry(manager: string, operation: 'Apply' | 'Update', apiVersion: string, time: string, paths: Iterable<string>): ManagedFieldsEntry {
  return { manager, operation, apiVersion, time, fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(paths) };
}

/** Keeps entries in their previous order so an unchanged object compares equal. */
function orderEntries(before: ManagedFieldsEntry[], next: ManagedFieldsEntry[]): ManagedFieldsEntry[] {
  const idOf = (e: ManagedFieldsEntry) => `${e.manager}\u0000${e.operation}\u0000${e.subresource ?? ''}`;
  const pos = new Map(before.map((e, i) => [idOf(e), i]));
  return [...next].sort((a, b) => (pos.get(idOf(a)) ?? Infinity) - (pos.get(idOf(b)) ?? Infinity));
}

function setsEqual(a: Set<string>, b: Set<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

function pickOwnable(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of OWNABLE_METADATA) if (meta?.[k] !== undefined) out[k] = meta[k];
  return out;
}

/** The object without server-owned parts, as apply merges it. */
function stripServer(obj: KubeObject): KubeObject {
  const { status: _s, ...rest } = obj;
  return { ...rest, metadata: pickOwnable(obj.metadata) } as KubeObject;
}
