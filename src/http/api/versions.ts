// An environment's history and what seed 001 builds on it (issue 25): versions, rollback to a
// version, the quarantined images; and each workspace's feature flags. Handlers validate, then
// call the store or a command (src/workflow); a rollback is a new deployment like any other.
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../errors';
import { features, quarantine, tenancy, versions, type Sql } from '../../store';
import { deploymentByVersion } from '../../workflow/admission';
import { rollbackTo, type CommandDeps } from '../../workflow';
import { deployments } from '../../store';
import { effectiveFeatures, type Feature } from '../../workflow/features';
import { EnvironmentRollbackBody, FeaturesBody, IdParams, QuarantineParams, VersionsQuery } from './schemas';
import { parse } from './parse';

async function environmentOr404(sql: Sql, id: string) {
  const env = await tenancy.getEnvironment(sql, id);
  if (!env) throw notFound('environment', id);
  return env;
}

export function versionRoutes(cmd: CommandDeps) {
  const sql = cmd.sql;
  const defaults: readonly Feature[] = cmd.defaultFeatures ?? features.FEATURES;
  return (app: FastifyInstance) => {
    app.get('/v1/environments/:id/versions', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const { limit } = parse(VersionsQuery, req.query, 'query');
      await environmentOr404(sql, id);
      return { environmentId: id, versions: await versions.listVersions(sql, id, limit) };
    });

    app.post('/v1/environments/:id/rollback', async (req, reply) => {
      const { id } = parse(IdParams, req.params, 'params');
      const body = parse(EnvironmentRollbackBody, req.body, 'body');
      await environmentOr404(sql, id);
      const source = body.version ? await deploymentByVersion(sql, id, body.version) : await deployments.getDeployment(sql, body.deploymentId!);
      if (!source || source.environmentId !== id) throw notFound('deployment', `${body.deploymentId} in environment ${id}`);
      const d = await rollbackTo(cmd, source, { force: body.force });
      return reply.status(202).send({ id: d.id, status: d.status, version: d.version, rollbackOf: source.id, rollbackOfVersion: source.version });
    });

    app.get('/v1/environments/:id/quarantine', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      await environmentOr404(sql, id);
      const rows = await quarantine.listQuarantined(sql, id);
      return { environmentId: id, images: rows.map((r) => ({ image: r.image, reason: r.reason, deploymentId: r.deploymentId, createdAt: r.createdAt })) };
    });

    app.delete('/v1/environments/:id/quarantine/:image', async (req) => {
      const { id, image } = parse(QuarantineParams, req.params, 'params');
      await environmentOr404(sql, id);
      if (!(await quarantine.releaseImage(sql, id, image))) throw notFound('quarantined image', image);
      return { environmentId: id, image: quarantine.quarantineKey(image), released: true };
    });

    app.get('/v1/workspaces/:id/features', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      if (!(await features.workspaceExists(sql, id))) throw notFound('workspace', id);
      return { workspaceId: id, features: effectiveFeatures(await features.getFeatures(sql, id), defaults) };
    });

    app.put('/v1/workspaces/:id/features', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const body = parse(FeaturesBody, req.body, 'body');
      if (!(await features.workspaceExists(sql, id))) throw notFound('workspace', id);
      return { workspaceId: id, features: effectiveFeatures(await features.setFeatures(sql, id, body), defaults) };
    });
  };
}
