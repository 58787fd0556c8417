// /v1/sentinels: list, and deploy one through SentinelService (merge semantics). A key lists and
// deploys the sentinels of its scope only; a deploy's audit row commits with the workflow's start.
import type { FastifyInstance } from 'fastify';
import { sentinels, type TxSql } from '../../store';
import type { Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { IdParams, ListSentinelsQuery, SentinelDeployBody, SentinelDeployQuery } from './schemas';
import { parse } from './parse';
import { assertKnownRegions } from '../../workflow/regions';
import { planSpan } from '../../tracing';
import { auditInTx } from '../audit';
import { scopeOf } from '../permissions';
import { principalOf, visible } from './scope';

export function sentinelRoutes(deps: { workflows: Workflows; engine: Engine }) {
  const { workflows, engine } = deps;
  const sql = workflows.commands.sql;
  return (app: FastifyInstance) => {
    app.get('/v1/sentinels', { config: { permission: 'deployments.read' } }, async (req) => {
      const q = parse(ListSentinelsQuery, req.query, 'query');
      const scope = scopeOf(principalOf(req));
      // An environment-scoped key sees its environment's sentinels whatever the query asks.
      const environmentId = scope?.environmentId ?? q.environmentId;
      if (scope?.environmentId && q.environmentId && q.environmentId !== scope.environmentId) return { sentinels: [], next: null };
      const rows = await sentinels.listSentinels(sql, { ...q, ...(environmentId ? { environmentId } : {}), scope });
      return { sentinels: rows, next: rows.length === q.limit ? rows[rows.length - 1]!.id : null };
    });

    app.post('/v1/sentinels/:id/deploy', { config: { permission: 'sentinels.write', action: 'sentinel.deploy' } }, async (req, reply) => {
      const { id } = parse(IdParams, req.params, 'params');
      const body = parse(SentinelDeployBody, req.body ?? {}, 'body');
      const { wait } = parse(SentinelDeployQuery, req.query, 'query');
      const sentinel = visible(req, await sentinels.getSentinel(sql, id), 'sentinel', id);
      const opts = { key: id, alongside: (tx: TxSql) => auditInTx(tx, req, { id, workspaceId: sentinel.workspaceId, projectId: sentinel.projectId, environmentId: sentinel.environmentId }) };
      await assertKnownRegions(sql, [sentinel.region], 'sentinel.region');
      // Each operator deploy is a trace of its own: the invocation ends its sentinel.deploy span.
      const attributes = { 'sentinel.id': id, region: sentinel.region };
      if (wait === 'false') {
        const { id: invocationId } = await planSpan('sentinel.deploy', attributes, () => engine.send(workflows.sentinel, 'deploy', body, opts));
        return reply.status(202).send({ sentinelId: id, invocationId });
      }
      // Waits up to the sentinel timeout (10 minutes by default); ?wait=false returns at once.
      return planSpan('sentinel.deploy', attributes, () => engine.call(workflows.sentinel, 'deploy', body, opts));
    });
  };
}
