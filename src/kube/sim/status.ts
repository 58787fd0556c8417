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
  | 'InternalError';

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
  details?: { name?: string; group?: string; kind?: string; uid?: string; causes?: StatusCause[] };
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
    this.errorCode = `ERR_KUBESIM_${reason.toUpperCase()}`;
    this.status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
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
