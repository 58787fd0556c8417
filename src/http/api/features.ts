// A workspace's feature flags (multi-region, autoscaling, blue-green, canary): what a deploy may
// ask for, read by admission once per deploy and journaled. Reading needs deployments.read in
// the workspace; setting them is the operator's (unscoped credentials only), since the flags are
// what the workspace was sold, not its own choice. A workspace outside a key's scope is the
// same 404 as a missing one, and a change's audit row commits with it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { features, tenancy, withTx, type Sql } from '../../store';
import { auditInTx } from '../audit';
import { visible } from './scope';
import type { CommandDeps } from '../../workflow';
import { effectiveFeatures, type Feature } from '../../workflow/deploy/features';
import { FeaturesBody, IdParams } from './schemas';
import { parse } from './parse';

/** A workspace the caller may see (a key: its own), or the same 404 as a missing one. */
async function workspaceOr404(sql: Sql, req: FastifyRequest, id: string) {
  const w = await tenancy.getWorkspace(sql, id);
  visible(req, w && { workspaceId: w.id }, 'workspace', id);
}

const READ = { config: { permission: 'deployments.read' as const } };

export function featureRoutes(cmd: CommandDeps) {
  const sql = cmd.sql;
  const defaults: readonly Feature[] = cmd.defaultFeatures ?? features.FEATURES;
  return (app: FastifyInstance) => {
    app.get('/v1/workspaces/:id/features', READ, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      await workspaceOr404(sql, req, id);
      return { workspaceId: id, features: effectiveFeatures(await features.getFeatures(sql, id), defaults) };
    });

    app.put('/v1/workspaces/:id/features', { config: { permission: 'environments.write', unscoped: true, action: 'workspace.features' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const body = parse(FeaturesBody, req.body, 'body');
      await workspaceOr404(sql, req, id);
      const stored = await withTx(sql, async (tx) => {
        const row = await features.setFeatures(tx, id, body);
        await auditInTx(tx, req, { id, workspaceId: id });
        return row;
      });
      return { workspaceId: id, features: effectiveFeatures(stored, defaults) };
    });
  };
}
