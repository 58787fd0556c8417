// What a request asks, in the authorizer's terms (the API server's RequestInfo): resource
// requests under /api/v1 and /apis/<group>/<version> with their verb, resource, subresource,
// namespace and name, and everything else (discovery documents, /version, /openapi, health)
// as non-resource requests on a path. Derived from the URL alone, before the server knows
// whether it serves the resource, so an unserved one is authorized first and then 404s, as in
// a real cluster. Also SelfSubjectAccessReview, which asks the same authorizer about the caller.
import type { UserInfo } from './auth';
import { parseBool } from './params';
import type { Attributes, Decision } from './rbac';
import { badRequest } from './status';
import type { KubeObject } from './types';

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** The name a list or watch is limited to by `fieldSelector=metadata.name=X`, if any. */
function selectedName(fieldSelector: string | null): string {
  if (!fieldSelector) return '';
  const terms = fieldSelector.split(',');
  for (const t of terms) {
    const m = /^metadata\.name(==?)(.*)$/.exec(t.trim());
    if (m && /^[^/%]+$/.test(m[2]!) && m[2] !== '.' && m[2] !== '..') return m[2]!;
  }
  return '';
}

export function requestAttributes(method: string, path: string, segs: string[], q: URLSearchParams): Attributes {
  const nonResource: Attributes = { verb: method.toLowerCase(), resourceRequest: false, path, apiGroup: '', apiVersion: '', resource: '', subresource: '', namespace: '', name: '' };
  let rest: string[];
  let apiGroup = '';
  let apiVersion: string;
  if (segs[0] === 'api' && segs.length >= 3) {
    apiVersion = segs[1]!;
    rest = segs.slice(2);
  } else if (segs[0] === 'apis' && segs.length >= 4) {
    apiGroup = segs[1]!;
    apiVersion = segs[2]!;
    rest = segs.slice(3);
  } else return nonResource;
  let verb = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method] ?? '';
  if (rest[0] === 'watch') {
    verb = 'watch';
    rest = rest.slice(1);
  }
  let namespace = '';
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespace = rest[1]!;
    // /namespaces/{name} and its status/finalize are the Namespace itself.
    if (rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2]!)) rest = rest.slice(2);
  }
  const a: Attributes = { ...nonResource, verb, resourceRequest: true, apiGroup, apiVersion, resource: rest[0] ?? '', name: rest[1] ?? '', subresource: rest[2] ?? '', namespace };
  if (a.resource === 'namespaces' && rest[0] === 'namespaces') a.namespace = a.name;
  if (a.verb === 'get' && !a.name) {
    const watch = q.get('watch');
    a.verb = watch !== null && parseBool(watch) ? 'watch' : 'list';
  }
  if ((a.verb === 'list' || a.verb === 'watch') && !a.name) a.name = selectedName(q.get('fieldSelector'));
  if (a.verb === 'delete' && !a.name) a.verb = 'deletecollection';
  return a;
}

interface ReviewSpec {
  resourceAttributes?: { namespace?: string; verb?: string; group?: string; version?: string; resource?: string; subresource?: string; name?: string };
  nonResourceAttributes?: { path?: string; verb?: string };
}

/** POST selfsubjectaccessreviews: the authorizer's decision on the caller, in status. */
export function selfSubjectAccessReview(body: unknown, user: UserInfo, decide: (a: Attributes) => Decision): KubeObject {
  const review = (body ?? {}) as KubeObject;
  const spec = (review.spec ?? {}) as ReviewSpec;
  const r = spec.resourceAttributes;
  const n = spec.nonResourceAttributes;
  if (!r && !n) throw badRequest('SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified');
  const attrs: Attributes = r
    ? { verb: r.verb ?? '', resourceRequest: true, path: '', apiGroup: r.group ?? '', apiVersion: r.version ?? '', resource: r.resource ?? '', subresource: r.subresource ?? '', namespace: r.namespace ?? '', name: r.name ?? '' }
    : { verb: n!.verb ?? '', resourceRequest: false, path: n!.path ?? '', apiGroup: '', apiVersion: '', resource: '', subresource: '', namespace: '', name: '' };
  const d = decide(attrs);
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    metadata: { creationTimestamp: null } as never,
    spec,
    status: { allowed: d.allowed, ...(d.reason ? { reason: d.reason } : {}) },
  };
}
