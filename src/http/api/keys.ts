// /v1/keys: scoped API keys. Created keys are shown once (`uik_…`) and stored hashed; lists
// carry no secret. A key with keys.write manages keys inside its own scope and can hand out only
// permissions it holds itself, so no key makes a stronger one, and none that outlives it: a
// child's expiresAt is at most its creator's (the creator's when it names none), and revoking a
// key revokes the keys it made, and theirs (issue 32); creations and revocations of a
// workspace's keys take one lock, so a key minted while its creator is being revoked is refused.
// Revocation is immediate on every replica (src/http/keys.ts closes the key's open calls and
// sockets). A workspace holds at most
// KEYS_PER_WORKSPACE live keys, so minting keys cannot multiply what the per-key limits allow.
// GET /v1/keys/self tells any caller what it may do (the web view hides the rest).
import type { FastifyInstance } from 'fastify';
import { AppError, notFound, unauthorized, validationError } from '../../errors';
import { apiKeys, tenancy, withTx } from '../../store';
import type { ApiKey } from '../../store/api-keys';
import type { Queryable } from '../../store/db';
import type { Workflows } from '../../workflow';
import { auditInTx } from '../audit';
import { forbiddenPermission, inScope, PERMISSIONS, permissionsBeyond, scopeOf, scopeWithin, type KeyScope, type Principal } from '../permissions';
import { principalOf, visible } from './scope';
import { IdParams } from './schemas';
import { CreateKeyBody } from './tenancy-schemas';
import { parse } from './parse';

const view = (k: ApiKey) => ({
  id: k.id,
  name: k.name,
  scope: { workspaceId: k.workspaceId, projectId: k.projectId, environmentId: k.environmentId },
  permissions: k.permissions,
  expiresAt: k.expiresAt,
  createdBy: k.createdBy,
  createdAt: k.createdAt,
  revokedAt: k.revokedAt,
});

/**
 * The scope as stored, after checking each level exists, lies in the one above and is visible to
 * the caller; otherwise the field and its problem. Visibility is judged with existence, so a key
 * asking about something outside its scope hears exactly what it would for an id that never
 * existed (issue 32: naming another tenant's environment once answered with that tenant's
 * project id). A workspace other than a key's own is not even looked up.
 */
async function checkedScope(
  sql: Queryable,
  p: Principal,
  s: { workspaceId: string; projectId?: string | undefined; environmentId?: string | undefined },
): Promise<KeyScope | { field: string; message: string }> {
  const ws = s.workspaceId;
  const own = p.type === 'key' ? p.scope : null;
  if ((own && own.workspaceId !== ws) || !(await tenancy.getWorkspace(sql, ws))) return { field: 'scope.workspaceId', message: `workspace ${ws} not found` };
  const env = s.environmentId ? await tenancy.getEnvironment(sql, s.environmentId) : undefined;
  const envMissing = { field: 'scope.environmentId', message: `environment ${s.environmentId} not found` };
  if (s.environmentId && (!env || env.workspaceId !== ws || !inScope(p, env))) return envMissing;
  const projectId = s.projectId ?? env?.projectId ?? null;
  if (projectId) {
    const prj = await tenancy.getProject(sql, projectId);
    if (!prj || prj.workspaceId !== ws || (own?.projectId && own.projectId !== projectId)) return { field: 'scope.projectId', message: `project ${projectId} not found` };
  }
  if (env && env.projectId !== projectId) return envMissing;
  return { workspaceId: ws, projectId, environmentId: s.environmentId ?? null };
}

/**
 * Live keys a workspace may hold. A team's people, CI systems and dashboards need tens; each key
 * carries its own rate and its own event sockets, so the cap bounds what one tenant can claim of
 * a replica by minting keys (the workspace's own rate limit bounds the rest).
 */
export const KEYS_PER_WORKSPACE = 100;

/** The expiry a new key gets: what the body asks, never past its creating key's. */
function cappedExpiry(p: Principal, asked: string | undefined): Date | null {
  const creator = p.type === 'key' ? p.expiresAt : null;
  const wanted = asked ? new Date(asked) : null;
  if (creator && wanted && wanted > creator) {
    throw validationError('invalid request body: expiresAt', [{ field: 'expiresAt', message: `must not be later than the creating key's own expiry (${creator.toISOString()})` }]);
  }
  return wanted ?? creator;
}

export function keyRoutes(deps: { workflows: Workflows; tenantCaps?: { keysPerWorkspace?: number | undefined } | undefined }) {
  const { sql } = deps.workflows.commands;
  const cap = deps.tenantCaps?.keysPerWorkspace ?? KEYS_PER_WORKSPACE;
  return (app: FastifyInstance) => {
    app.post('/v1/keys', { config: { permission: 'keys.write', action: 'key.create' } }, async (req, reply) => {
      const body = parse(CreateKeyBody, req.body, 'body');
      const p = principalOf(req);
      const scope = await checkedScope(sql, p, body.scope);
      if ('field' in scope) throw validationError(`invalid request body: ${scope.field}`, [scope]);
      if (p.type === 'key' && !scopeWithin(p.scope, scope)) throw validationError('invalid request body: scope', [{ field: 'scope', message: 'must lie within the creating key\'s own scope' }]);
      const beyond = permissionsBeyond(p, body.permissions);
      if (beyond.length) throw forbiddenPermission(beyond[0]!, `a key cannot grant permissions it does not hold: ${beyond.join(', ')}`);
      const expiresAt = cappedExpiry(p, body.expiresAt);
      const created = await withTx(sql, async (tx) => {
        const live = await apiKeys.countLiveKeysLocked(tx, scope.workspaceId);
        // Under the lock a revocation of the creator takes: the guard admitted the creator
        // before, maybe while its revocation was committing, and a child minted then would be
        // in no tree the revocation walked.
        if (p.type === 'key' && !(await apiKeys.isLive(tx, p.id))) throw unauthorized('invalid or revoked API key');
        // And under the lock a scope's deletion takes before it revokes the scope's keys: the
        // scope checked above may have been deleted while this waited, its keys revoked without
        // this one (attack-scope-delete-race.test.ts).
        const still = await checkedScope(tx, p, body.scope);
        if ('field' in still) throw validationError(`invalid request body: ${still.field}`, [still]);
        if (live >= cap) {
          throw new AppError('ERR_TENANCY_LIMIT', `workspace ${scope.workspaceId} holds ${cap} live keys, its cap; revoke one first`);
        }
        const r = await apiKeys.createKey(tx, {
          name: body.name,
          ...scope,
          permissions: body.permissions,
          expiresAt,
          createdBy: p.type === 'key' ? p.id : 'admin',
        });
        await auditInTx(tx, req, { id: r.id, ...scope });
        return r;
      });
      return reply.status(201).send({ ...view(created.row), key: created.key });
    });

    app.get('/v1/keys', { config: { permission: 'keys.write' } }, async (req) => ({ keys: (await apiKeys.listKeys(sql, scopeOf(principalOf(req)))).map(view) }));

    app.get('/v1/keys/self', { config: { permission: 'any' } }, async (req) => {
      const p = principalOf(req);
      if (p.type === 'admin') return { type: 'admin', id: null, scope: null, permissions: [...PERMISSIONS], unscoped: true };
      return { type: 'key', id: p.id, scope: p.scope, permissions: [...p.permissions], unscoped: false };
    });

    app.delete('/v1/keys/:id', { config: { permission: 'keys.write', action: 'key.revoke' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      return withTx(sql, async (tx) => {
        const k = visible(req, await apiKeys.getKey(tx, id), 'key', id);
        // Serializes with creations in the workspace: the walk below sees every child committed.
        await apiKeys.lockWorkspaceKeys(tx, k.workspaceId);
        const r = await apiKeys.revokeKey(tx, id);
        if (!r.revoked) throw notFound('live key', id);
        await auditInTx(tx, req, { id, workspaceId: k.workspaceId, projectId: k.projectId, environmentId: k.environmentId });
        // The keys it made go with it: nothing a key handed out outlives it.
        return { id, revoked: true, alsoRevoked: r.descendants };
      });
    });
  };
}
