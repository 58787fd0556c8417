// /v1/sentinels: list, and deploy one through SentinelService (merge semantics).
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../errors';
import { sentinels } from '../../store';
import type { Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { IdParams, ListSentinelsQuery, SentinelDeployBody, SentinelDeployQuery } from './schemas';
import { parse } from './parse';
import { assertKnownRegions } from '../../workflow/regions';
import { planSpan } from '../../tracing';

export function sentinelRoutes(deps: { workflows: Workflows; engine: Engine }) {
  const { workflows, engine } = deps;
  const sql = workflows.commands.sql;
  return (app: FastifyInstance) => {
    app.get('/v1/sentinels', async (req) => {
      const q = parse(ListSentinelsQuery, req.query, 'query');
      const rows = await sentinels.listSentinels(sql, q);
      return { sentinels: rows, next: rows.length === q.limit ? rows[rows.length - 1]!.id : null };
    });

    app.post('/v1/sentinels/:id/deploy', async (req, reply) => {
      const { id } = parse(IdParams, req.params, 'params');
      const body = parse(SentinelDeployBody, req.body ?? {}, 'body');
      const { wait } = parse(SentinelDeployQuery, req.query, 'query');
      const sentinel = await sentinels.getSentinel(sql, id);
      if (!sentinel) throw notFound('sentinel', id);
      await assertKnownRegions(sql, [sentinel.region], 'sentinel.region');
      // Each operator deploy is a trace of its own: the invocation ends its sentinel.deploy span.
      const attributes = { 'sentinel.id': id, region: sentinel.region };
      if (wait === 'false') {
        const { id: invocationId } = await planSpan('sentinel.deploy', attributes, () => engine.send(workflows.sentinel, 'deploy', body, { key: id }));
        return reply.status(202).send({ sentinelId: id, invocationId });
      }
      // Waits up to the sentinel timeout (10 minutes by default); ?wait=false returns at once.
      return planSpan('sentinel.deploy', attributes, () => engine.call(workflows.sentinel, 'deploy', body, { key: id }));
    });
  };
}
