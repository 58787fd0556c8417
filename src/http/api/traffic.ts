// GET /v1/environments/:id/traffic: an environment's routing table (issue 13), as krane applies
// it in every region. An environment that never had a ready deployment has a hostname and no
// backends; an unknown one is a 404.
import type { FastifyInstance } from 'fastify';
import { visible } from './scope';
import { routes, tenancy } from '../../store';
import type { Workflows } from '../../workflow';
import { environmentHostname } from '../../workflow/progressive/traffic';
import { IdParams } from './schemas';
import { parse } from './parse';

export function trafficRoutes(deps: { workflows: Workflows }) {
  const { sql, apexDomain } = deps.workflows.commands;
  return (app: FastifyInstance) => {
    app.get('/v1/environments/:id/traffic', { config: { permission: 'deployments.read' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const [env, table] = await Promise.all([tenancy.getEnvironment(sql, id), routes.getRoutes(sql, id)]);
      const e = visible(req, env, 'environment', id);
      return {
        environmentId: id,
        hostname: table?.hostname ?? environmentHostname(e, apexDomain),
        backends: (table?.backends ?? []).map((b) => ({ deploymentId: b.deploymentId, weight: b.weight })),
      };
    });
  };
}
