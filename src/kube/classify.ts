// What krane does with a refusal from the API server, as one pure function of the answer's
// facts (status code, Status reason and causes, Retry-After), table-tested. Two outcomes:
//
// - permanent: this object cannot be stored as it is (invalid, forbidden by quota, admission or
//   RBAC, too large, its namespace missing). Retrying the same state cannot help until someone
//   changes the cluster or the desired state; krane reports the resource as failed with the
//   reason and moves past the event, so one object never stalls its region (the next full sync
//   tries it again);
// - retry: waiting can fix it (a conflict with another writer, throttling, an API server or
//   network in trouble, a namespace being deleted). krane backs off, honouring Retry-After, and
//   holds its cursor.
//
// Decisions read the status and the Status body's structured fields. The one exception is
// etcd's size limit: the API server passes it through as a bare 500 whose only mark is etcd's
// fixed message (kubernetes/kubernetes#112152), so that one message is compared exactly.

/** The facts of a failed API call (src/kube/client.ts#apiFailure extracts them). */
export interface ApiFailure {
  /** HTTP status; undefined when no answer arrived (connection refused, reset, timeout). */
  status?: number;
  /** Status.reason: NotFound, Forbidden, Invalid, Conflict, TooManyRequests, … */
  reason?: string;
  message: string;
  /** Status.details.kind: the resource the answer is about (`namespaces` for a missing namespace). */
  detailsKind?: string;
  /** Status.details.causes: reason (a cause type such as NamespaceTerminating), field, message. */
  causes: { reason: string; field?: string; message?: string }[];
  /** From the Retry-After header, else Status.details.retryAfterSeconds. */
  retryAfterSeconds?: number;
}

export type PermanentCode = 'ERR_KUBE_INVALID' | 'ERR_KUBE_FORBIDDEN' | 'ERR_KUBE_TOO_LARGE' | 'ERR_KUBE_NAMESPACE_MISSING' | 'ERR_KUBE_REJECTED' | 'ERR_KUBE_KIND_UNAVAILABLE';
export type RetryCode =
  | 'ERR_KUBE_CONFLICT'
  | 'ERR_KUBE_THROTTLED'
  | 'ERR_KUBE_UNAVAILABLE'
  | 'ERR_KUBE_UNAUTHORIZED'
  | 'ERR_KUBE_NAMESPACE_TERMINATING';

export type Verdict = { kind: 'permanent'; code: PermanentCode } | { kind: 'retry'; code: RetryCode; retryAfterMs?: number };

/** What etcd answers for a write over its request size limit (1.5 MiB by default). */
export const ETCD_TOO_LARGE = 'etcdserver: request is too large';
/** The cause type the NamespaceLifecycle admission plugin attaches while a namespace is deleted. */
const NAMESPACE_TERMINATING = 'NamespaceTerminating';
/**
 * A Retry-After beyond this is treated as this: a 429 must slow krane down, not park a
 * resource for an hour on one bad header. Ten minutes is twice the default resync interval.
 */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

export function classifyApiFailure(f: ApiFailure): Verdict {
  const s = f.status;
  if (s === undefined) return { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE' };
  switch (s) {
    case 400:
    case 422:
      return { kind: 'permanent', code: 'ERR_KUBE_INVALID' };
    case 401:
      // krane's own credentials: rotating them fixes every object at once, so wait for it.
      return { kind: 'retry', code: 'ERR_KUBE_UNAUTHORIZED' };
    case 403:
      return f.causes.some((c) => c.reason === NAMESPACE_TERMINATING) ? { kind: 'retry', code: 'ERR_KUBE_NAMESPACE_TERMINATING' } : { kind: 'permanent', code: 'ERR_KUBE_FORBIDDEN' };
    case 404:
      // A server-side apply creates what is missing; only its namespace can be. That is the
      // operator's to fix (deploy/krane-rbac.yaml creates both namespaces): report it.
      if (f.detailsKind === 'namespaces') return { kind: 'permanent', code: 'ERR_KUBE_NAMESPACE_MISSING' };
      // No details at all: the resource type itself is not served (its CRD is not installed,
      // or was removed after the client cached discovery). Waiting does not install it.
      if (f.detailsKind === undefined && f.reason === 'NotFound') return { kind: 'permanent', code: 'ERR_KUBE_KIND_UNAVAILABLE' };
      return { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE' };
    case 408:
      return { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE' };
    case 409:
      return { kind: 'retry', code: 'ERR_KUBE_CONFLICT' };
    case 413:
      return { kind: 'permanent', code: 'ERR_KUBE_TOO_LARGE' };
    case 429:
      return { kind: 'retry', code: 'ERR_KUBE_THROTTLED', ...retryAfter(f) };
  }
  if (s === 500 && f.message.trim().endsWith(ETCD_TOO_LARGE)) return { kind: 'permanent', code: 'ERR_KUBE_TOO_LARGE' };
  if (s >= 500) return { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE', ...retryAfter(f) };
  // Any other 4xx (405, 406, 415, …): the request itself is wrong for this server.
  if (s >= 400) return { kind: 'permanent', code: 'ERR_KUBE_REJECTED' };
  return { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE' };
}

function retryAfter(f: ApiFailure): { retryAfterMs?: number } {
  const sec = f.retryAfterSeconds;
  if (sec === undefined || !Number.isFinite(sec) || sec < 0) return {};
  return { retryAfterMs: Math.min(Math.round(sec * 1000), MAX_RETRY_AFTER_MS) };
}

/**
 * A 422 refusing a change to a field that can only be set when the object is created (a
 * StatefulSet's selector, serviceName or volumeClaimTemplates, a Deployment's selector): the
 * object must be deleted and recreated. Read from the causes, as the API server words them:
 * the StatefulSet rule forbids `spec` as a whole, the others mark one field immutable.
 */
export function isImmutableFieldChange(f: ApiFailure): boolean {
  if (f.status !== 422) return false;
  return f.causes.some(
    (c) => (c.reason === 'FieldValueForbidden' && c.field === 'spec') || (c.reason === 'FieldValueInvalid' && (c.message ?? '').endsWith('field is immutable')),
  );
}
