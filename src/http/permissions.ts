// Who is calling the public API and what it may do: the principal (the admin token, or a scoped
// API key), the permission names, and the pure rules that decide. No I/O here: the guard
// (src/http/api/guard.ts) builds the principal, routes declare what they need in their config
// (`permission`, `unscoped`, `action`), and handlers ask `inScope` about the rows they load.
//
// Rules: the admin token holds every permission with no scope. A key holds its permissions
// inside its scope (a workspace, optionally narrowed to a project or an environment). Outside its
// scope a key sees nothing: the row is answered as not found (404, its existence unconfirmed),
// lists and live events leave it out. A missing permission is 403 ERR_FORBIDDEN naming it.
// Fleet-wide operations (sentinel rollouts) need an unscoped credential, which only the admin
// token is. A route that declares no permission is the admin token's alone: new routes fail
// closed until they say what a key needs.
import { AppError } from '../errors';

export const PERMISSIONS = [
  'deployments.read',
  'deployments.write',
  'environments.write',
  'traffic.write',
  'sentinels.write',
  'rollouts.write',
  'regions.read',
  'invocations.read',
  'invocations.write',
  'audit.read',
  'keys.write',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const isPermission = (p: string): p is Permission => (PERMISSIONS as readonly string[]).includes(p);

export interface KeyScope {
  workspaceId: string;
  projectId: string | null;
  environmentId: string | null;
}

export type Principal =
  | { type: 'admin' }
  | { type: 'key'; id: string; scope: KeyScope; permissions: ReadonlySet<Permission>; expiresAt: Date | null };

/** What a route asks of its caller (fastify route `config`). */
export interface RouteAccess {
  /** The permission it needs; `'any'`: any authenticated caller. Absent: the admin token only. */
  permission?: Permission | 'any';
  /** Fleet-wide: no scoped credential may call it. */
  unscoped?: boolean;
  /** Mutating routes name their audit action (e.g. `deployment.stop`). */
  action?: string;
}

export const ADMIN: Principal = { type: 'admin' };

export const forbiddenPermission = (perm: string, detail?: string) =>
  new AppError('ERR_FORBIDDEN', detail ?? `this key lacks the permission ${perm}`, { details: [{ field: 'permission', message: perm }] });

/** The refusal for a caller and a route, or null when it may go on. */
export function accessProblem(p: Principal, access: RouteAccess): AppError | null {
  if (p.type === 'admin') return null;
  if (access.unscoped) return forbiddenPermission(access.permission ?? 'admin', 'this is a fleet-wide operation: it needs an unscoped credential (the admin token)');
  if (access.permission === undefined) return forbiddenPermission('admin', 'this route is for the admin token only');
  if (access.permission === 'any' || p.permissions.has(access.permission)) return null;
  return forbiddenPermission(access.permission);
}

export function can(p: Principal, perm: Permission): boolean {
  return p.type === 'admin' || p.permissions.has(perm);
}

/** Whether a resource of this scope is visible to the principal. Ids missing on the resource
 *  side (a project has no environment) only match a key not narrowed that far. */
export function inScope(p: Principal, r: { workspaceId: string; projectId?: string | null; environmentId?: string | null }): boolean {
  if (p.type === 'admin') return true;
  const s = p.scope;
  if (r.workspaceId !== s.workspaceId) return false;
  if (s.projectId && r.projectId !== s.projectId) return false;
  if (s.environmentId && r.environmentId !== s.environmentId) return false;
  return true;
}

/** The filter a list applies: null for everything (admin). */
export function scopeOf(p: Principal): KeyScope | null {
  return p.type === 'admin' ? null : p.scope;
}

/** Whether `inner` lies within `outer` (a key may only make keys inside its own scope). */
export function scopeWithin(outer: KeyScope, inner: KeyScope): boolean {
  if (inner.workspaceId !== outer.workspaceId) return false;
  if (outer.projectId && inner.projectId !== outer.projectId) return false;
  if (outer.environmentId && inner.environmentId !== outer.environmentId) return false;
  return true;
}

/** A key cannot hand out what it does not hold. */
export function permissionsBeyond(p: Principal, wanted: readonly Permission[]): Permission[] {
  return p.type === 'admin' ? [] : wanted.filter((w) => !p.permissions.has(w));
}
