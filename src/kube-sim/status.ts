// Kubernetes Status objects and the error that carries one. Every failure the simulator
// answers with is a Status with the code and reason the real API server would use, because
// clients branch on them (409 AlreadyExists vs Conflict, 410 Expired → relist, 422 Invalid).
import type { ResourceDef } from './resources';

export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'Gone'
  | 'Expired'
  | 'BadRequest'
  | 'MethodNotAllowed'
  | 'UnsupportedMediaType'
  | 'NotAcceptable'
  | 'Forbidden'
  | 'Unauthorized'
  | 'TooManyRequests'
  | 'RequestEntityTooLarge'
  | 'InternalError'
  /** StatusReasonUnknown: the API server sends no reason for errors it did not classify. */
  | '';

export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: StatusReason;
  details?: { name?: string; group?: string; kind?: string; uid?: string; causes?: StatusCause[]; retryAfterSeconds?: number };
  code: number;
}

/** A request failure; `status` is the body sent and `code` the HTTP status. */
export class SimError extends Error {
  readonly status: KubeStatus;
  readonly code: number;
  /** Stable error code for logs and tests, ERR_KUBESIM_<WHAT>. */
  readonly errorCode: string;

  constructor(code: number, reason: StatusReason, message: string, details?: KubeStatus['details']) {
    super(message);
    this.name = 'SimError';
    this.code = code;
    this.errorCode = `ERR_KUBESIM_${(reason || 'UNKNOWN').toUpperCase()}`;
    this.status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, ...(reason ? { reason } : {}), ...(details ? { details } : {}), code };
  }
}

const qualified = (r: ResourceDef) => (r.group ? `${r.plural}.${r.group}` : r.plural);

export const notFoundError = (r: ResourceDef, name: string) =>
  new SimError(404, 'NotFound', `${qualified(r)} "${name}" not found`, { name, group: r.group, kind: r.plural });

export const namespaceNotFound = (ns: string) =>
  new SimError(404, 'NotFound', `namespaces "${ns}" not found`, { name: ns, kind: 'namespaces' });

export const alreadyExists = (r: ResourceDef, name: string) =>
  new SimError(409, 'AlreadyExists', `${qualified(r)} "${name}" already exists`, { name, group: r.group, kind: r.plural });

export const conflictError = (r: ResourceDef, name: string, message: string, causes?: StatusCause[]) =>
  new SimError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(r)} "${name}": ${message}`, {
    name,
    group: r.group,
    kind: r.plural,
    ...(causes ? { causes } : {}),
  });

export const invalidError = (r: ResourceDef, name: string, causes: StatusCause[]) => {
  const what = `${r.kind}${r.group ? `.${r.group}` : ''} "${name}"`;
  const summary = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join(', ');
  return new SimError(422, 'Invalid', `${what} is invalid: ${summary}`, { name, group: r.group, kind: r.kind, causes });
};

export const badRequest = (message: string) => new SimError(400, 'BadRequest', message);

export const goneError = (message: string) => new SimError(410, 'Expired', message);

export const successStatus = (r: ResourceDef, name: string, uid?: string): KubeStatus => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Success',
  details: { name, group: r.group, kind: r.plural, ...(uid ? { uid } : {}) },
  code: 200,
});

const resourceName = (r: ResourceDef) => qualified(r);

/** The API server's Forbidden: `<resource> "<name>" is forbidden: <why>` (admission refusals). */
export const forbiddenError = (r: ResourceDef, name: string, why: string, causes?: StatusCause[]) =>
  new SimError(403, 'Forbidden', `${resourceName(r)}${name ? ` "${name}"` : ''} is forbidden: ${why}`, {
    ...(name ? { name } : {}),
    group: r.group,
    kind: r.plural,
    ...(causes ? { causes } : {}),
  });

/** Server-side apply conflicts: the message lists them, the details carry only the causes. */
export const applyConflictError = (message: string, causes: StatusCause[]) => new SimError(409, 'Conflict', message, { causes });

/** Bodies over the API server's request limit (3 MiB), refused before decoding. */
export const REQUEST_BODY_LIMIT = 3 * 1024 * 1024;
export const entityTooLarge = () => new SimError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${REQUEST_BODY_LIMIT}`);

/** etcd's own limit on a stored value (--max-request-bytes, 1.5 MiB). */
export const STORED_OBJECT_LIMIT = 1.5 * 1024 * 1024;
/** etcd refuses the write; the API server passes the error on unclassified (no reason). */
export const etcdTooLarge = () => new SimError(500, '', 'etcdserver: request is too large');
