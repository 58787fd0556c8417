// Scope checks in handlers: a row outside the caller's scope is answered exactly like a row
// that does not exist (404), so a key learns nothing about other tenants.
import type { FastifyRequest } from 'fastify';
import { AppError, notFound } from '../../errors';
import { ADMIN, inScope, type Principal } from '../permissions';

/** The guard always sets it; a route registered outside the guard is the admin's (tests, tools). */
export const principalOf = (req: FastifyRequest): Principal => req.principal ?? ADMIN;

/** The row when the caller may see it; otherwise the same 404 as a missing row. */
export function visible<T extends { workspaceId: string; projectId?: string | null; environmentId?: string | null }>(
  req: FastifyRequest,
  row: T | undefined,
  what: string,
  id: string,
): T {
  if (!row || !inScope(principalOf(req), row)) throw notFound(what, id);
  return row;
}

/** PostgreSQL's unique violation, raised by a racing insert of the same id or slug. */
export async function conflictOnDuplicate<T>(p: Promise<T>, message: string): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if ((err as { code?: unknown }).code === '23505') throw new AppError('ERR_TENANCY_CONFLICT', message);
    throw err;
  }
}
