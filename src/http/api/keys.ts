// /v1/keys: scoped API keys. Created keys are shown once (`uik_…`) and stored hashed; lists
// carry no secret. A key with keys.write manages keys inside its own scope and can hand out only
// permissions it holds itself, so no key makes a stronger one. Revocation is immediate on every
// replica (src/http/keys.ts closes the key's open calls and sockets). GET /v1/keys/self tells
// any caller what it may do (the web view hides the rest).
import type { FastifyInstance } from 'fastify';
import { notFound, validationError } from '../../errors';
import { apiKeys, tenancy, withTx } from '../../store';
import type { ApiKey } from '../../store/api-keys';
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
  sql: Workflows['commands']['sql'],
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

export function keyRoutes(deps: { workflows: Workflows }) {
  const { sql } = deps.workflows.commands;
  return (app: FastifyInstance) => {
    app.post('/v1/keys', { config: { permission: 'keys.write', action: 'key.create' } }, async (req, reply) => {
      const body = parse(CreateKeyBody, req.body, 'body');
      const p = principalOf(req);
      const scope = await checkedScope(sql, p, body.scope);
      if ('field' in scope) throw validationError(`invalid request body: ${scope.field}`, [scope]);
      if (p.type === 'key' && !scopeWithin(p.scope, scope)) throw validationError('invalid request body: scope', [{ field: 'scope', message: 'must lie within the creating key\'s own scope' }]);
      const beyond = permissionsBeyond(p, body.permissions);
      if (beyond.length) throw forbiddenPermission(beyond[0]!, `a key cannot grant permissions it does not hold: ${beyond.join(', ')}`);
      const created = await withTx(sql, async (tx) => {
        const r = await apiKeys.createKey(tx, {
          name: body.name,
          ...scope,
          permissions: body.permissions,
          expiresAt: body.expiresAt ? new Date(body.expiresAt) : null,
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
        if (!(await apiKeys.revokeKey(tx, id))) throw notFound('live key', id);
        await auditInTx(tx, req, { id, workspaceId: k.workspaceId, projectId: k.projectId, environmentId: k.environmentId });
        return { id, revoked: true };
      });
    });
  };
}
