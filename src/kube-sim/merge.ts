// Patch semantics: RFC 7386 merge patch, a strategic merge patch that merges the list fields
// Kubernetes marks with merge keys (containers by name, ports by port+protocol, …) and replaces
// the rest, and RFC 6902 JSON patch (the generated typed clients default to it for PATCH).
import { badRequest, SimError } from './status';

const isMap = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The merge key of an item of the list field `field`, or undefined when the list is atomic.
 * These mirror the patchMergeKey / listMapKeys of the Kubernetes types the simulator serves;
 * a port's protocol is part of its key because one port number may appear as TCP and UDP.
 */
export function listItemKey(field: string, item: unknown): Record<string, unknown> | undefined {
  if (!isMap(item)) return undefined;
  switch (field) {
    case 'containers':
    case 'initContainers':
    case 'ephemeralContainers':
    case 'env':
    case 'volumes':
    case 'imagePullSecrets':
    case 'containerStatuses':
    case 'initContainerStatuses':
      return typeof item.name === 'string' ? { name: item.name } : undefined;
    case 'ports':
      if (typeof item.containerPort === 'number') return { containerPort: item.containerPort, protocol: item.protocol ?? 'TCP' };
      if (typeof item.port === 'number') return { port: item.port, protocol: item.protocol ?? 'TCP' };
      return undefined;
    case 'volumeMounts':
      return typeof item.mountPath === 'string' ? { mountPath: item.mountPath } : undefined;
    case 'conditions':
      return typeof item.type === 'string' ? { type: item.type } : undefined;
    case 'ownerReferences':
      return typeof item.uid === 'string' ? { uid: item.uid } : undefined;
    case 'topologySpreadConstraints':
      return typeof item.topologyKey === 'string' ? { topologyKey: item.topologyKey, whenUnsatisfiable: item.whenUnsatisfiable } : undefined;
    default:
      return undefined;
  }
}

export const keyString = (k: Record<string, unknown>): string => JSON.stringify(k, Object.keys(k).sort());

export function isKeyedList(field: string, arr: unknown[]): boolean {
  return arr.length > 0 && arr.every((i) => listItemKey(field, i) !== undefined);
}

/** RFC 7386: maps merge recursively, null deletes, everything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isMap(patch)) return patch;
  const out: Record<string, unknown> = isMap(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * Merges `patch` into `target` the strategic way. `deleteNulls` is true for strategic merge
 * patches (null removes a field) and false for server-side apply, where the applied
 * configuration is merged and removals come from field ownership instead.
 */
export function strategicMerge(target: unknown, patch: unknown, deleteNulls: boolean, field = ''): unknown {
  if (Array.isArray(patch)) {
    if (!Array.isArray(target) || !isKeyedList(field, patch)) return patch;
    if (!target.every((i) => listItemKey(field, i) !== undefined)) return patch;
    const out = [...target];
    const index = new Map<string, number>(out.map((item, i) => [keyString(listItemKey(field, item)!), i]));
    for (const item of patch) {
      const ks = keyString(listItemKey(field, item)!);
      if (isMap(item) && item.$patch === 'delete') {
        const at = index.get(ks);
        if (at !== undefined) out[at] = undefined;
        continue;
      }
      const at = index.get(ks);
      if (at === undefined) {
        index.set(ks, out.length);
        out.push(strategicMerge(undefined, item, deleteNulls));
      } else out[at] = strategicMerge(out[at], item, deleteNulls);
    }
    return out.filter((i) => i !== undefined);
  }
  if (!isMap(patch)) return patch;
  if (patch.$patch === 'replace') {
    const { $patch: _ignored, ...rest } = patch;
    return rest;
  }
  const out: Record<string, unknown> = isMap(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue;
    if (v === null) {
      if (deleteNulls) delete out[k];
      continue;
    }
    out[k] = strategicMerge(out[k], v, deleteNulls, k);
  }
  return out;
}

interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

const decodePointer = (p: string): string[] => {
  if (p === '') return [];
  if (!p.startsWith('/')) throw badRequest(`invalid JSON pointer ${JSON.stringify(p)}`);
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
};

function getAt(doc: unknown, path: string[]): unknown {
  let cur: any = doc;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = Array.isArray(cur) ? cur[Number(seg)] : cur[seg];
  }
  return cur;
}

function parentOf(doc: unknown, path: string[], op: string): { parent: any; last: string } {
  if (path.length === 0) throw badRequest(`${op} on the document root is not supported`);
  const parent = getAt(doc, path.slice(0, -1));
  if (parent === null || typeof parent !== 'object') {
    throw new SimError(422, 'Invalid', `the server rejected our request due to an error in our request: doc is missing path: ${'/' + path.join('/')}`);
  }
  return { parent, last: path[path.length - 1]! };
}

/** RFC 6902 applied to a deep copy of `doc`. */
export function jsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw badRequest('json patch body must be an array of operations');
  let out: unknown = structuredClone(doc);
  for (const raw of ops as JsonPatchOp[]) {
    const path = decodePointer(raw.path);
    const add = (p: string[], value: unknown) => {
      const { parent, last } = parentOf(out, p, 'add');
      if (Array.isArray(parent)) {
        const i = last === '-' ? parent.length : Number(last);
        parent.splice(i, 0, structuredClone(value));
      } else parent[last] = structuredClone(value);
    };
    const remove = (p: string[]) => {
      const { parent, last } = parentOf(out, p, 'remove');
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else {
        if (!(last in parent)) throw new SimError(422, 'Invalid', `the server rejected our request due to an error in our request: unable to remove nonexistent key: ${last}`);
        delete parent[last];
      }
    };
    switch (raw.op) {
      case 'add':
        add(path, raw.value);
        break;
      case 'remove':
        remove(path);
        break;
      case 'replace':
        if (path.length === 0) out = structuredClone(raw.value);
        else {
          const { parent, last } = parentOf(out, path, 'replace');
          if (Array.isArray(parent)) parent[Number(last)] = structuredClone(raw.value);
          else parent[last] = structuredClone(raw.value);
        }
        break;
      case 'move': {
        const from = decodePointer(raw.from ?? '');
        const v = getAt(out, from);
        remove(from);
        add(path, v);
        break;
      }
      case 'copy':
        add(path, getAt(out, decodePointer(raw.from ?? '')));
        break;
      case 'test':
        if (JSON.stringify(getAt(out, path)) !== JSON.stringify(raw.value)) {
          throw new SimError(422, 'Invalid', `the server rejected our request due to an error in our request: testing value ${raw.path} failed`);
        }
        break;
      default:
        throw badRequest(`unknown json patch operation ${JSON.stringify((raw as { op: unknown }).op)}`);
    }
  }
  return out;
}

/** Structural equality for JSON values (key order does not matter). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a as object).filter((k) => (a as any)[k] !== undefined);
  const kb = Object.keys(b as object).filter((k) => (b as any)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!deepEqual((a as any)[k], (b as any)[k])) return false;
  return true;
}
