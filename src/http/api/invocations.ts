// /v1/invocations: the engine's operator views (list, one with its journal, cancel). Secrets
// the workflows carry (webhook URLs, env values) are redacted (src/workflow/outbound/secrets.ts). A key
// sees the invocations of deployments and sentinels of its scope only (others are 404 or left
// out); fleet rollouts' invocations are the admin token's.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound } from '../../errors';
import { tenancy, type Sql } from '../../store';
import { redactInvocation } from '../../workflow/outbound/secrets';
import type { Engine, InvocationView } from '../../workflow/engine';
import { inScope } from '../permissions';
import { IdParams, ListInvocationsQuery } from './schemas';
import { parse } from './parse';
import { principalOf } from './scope';

/** The invocations among `list` that the caller may see. */
async function visibleInvocations(sql: Sql, req: FastifyRequest, list: InvocationView[]): Promise<InvocationView[]> {
  const p = principalOf(req);
  if (p.type === 'admin') return list;
  const scopes = await tenancy.scopesOf(sql, [...new Set(list.map((i) => i.key).filter((k): k is string => !!k))]);
  return list.filter((i) => {
    const s = i.key ? scopes.get(i.key) : undefined;
    return !!s && inScope(p, s);
  });
}

export function invocationRoutes(deps: { engine: Engine }) {
  const { engine } = deps;
  const sql = engine.sql;
  const one = async (req: FastifyRequest, id: string) => {
    const inv = await engine.getInvocation(id);
    if ((await visibleInvocations(sql, req, [inv])).length === 0) throw notFound('invocation', id);
    return inv;
  };
  return (app: FastifyInstance) => {
    app.get('/v1/invocations', { config: { permission: 'invocations.read' } }, async (req) => {
      const q = parse(ListInvocationsQuery, req.query, 'query');
      const p = principalOf(req);
      // A key's scope is part of the query, before its limit: filtering a page of the fleet's
      // newest afterwards let other tenants' activity push the key's own out of its page.
      const keys = p.type === 'key' ? await tenancy.objectIdsInScope(sql, p.scope) : undefined;
      const list = await visibleInvocations(sql, req, await engine.listInvocations({ ...q, ...(keys ? { keys } : {}) }));
      return { invocations: list.map(redactInvocation) };
    });
    app.get('/v1/invocations/:id', { config: { permission: 'invocations.read' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      return redactInvocation(await one(req, id));
    });
    app.post('/v1/invocations/:id/cancel', { config: { permission: 'invocations.write', action: 'invocation.cancel' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      await one(req, id);
      return { id, ...(await engine.cancel(id)) };
    });
  };
}
