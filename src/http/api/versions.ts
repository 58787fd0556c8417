// An environment's history and what seed 001 builds on it (issue 25): versions, rollback to a
// version, the quarantined images (the workspace's feature flags are in features.ts). Handlers validate, then
// call the store or a command (src/workflow); a rollback is a new deployment like any other.
// Like every route: a permission each (routes.write ones name their audit action), an
// environment or workspace outside a key's scope is a 404, and each change's audit row commits
// with it (the rollback's in its deployment's insert, the others in their own transaction).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound } from '../../errors';
import { quarantine, tenancy, versions, withTx, type Sql } from '../../store';
import { auditAlongside, auditInTx } from '../audit';
import { visible } from './scope';
import { deploymentByVersion } from '../../workflow/deploy/admission';
import { rollbackTo, type CommandDeps } from '../../workflow';
import { deployments } from '../../store';
import { EnvironmentRollbackBody, IdParams, QuarantineParams, VersionsQuery } from './schemas';
import { parse } from './parse';

async function environmentOr404(sql: Sql, req: FastifyRequest, id: string) {
  const env = await tenancy.getEnvironment(sql, id);
  return visible(req, env && { ...env, environmentId: env.id }, 'environment', id);
}

const READ = { config: { permission: 'deployments.read' as const } };

export function versionRoutes(cmd: CommandDeps) {
  const sql = cmd.sql;
  return (app: FastifyInstance) => {
    app.get('/v1/environments/:id/versions', READ, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const { limit } = parse(VersionsQuery, req.query, 'query');
      await environmentOr404(sql, req, id);
      return { environmentId: id, versions: await versions.listVersions(sql, id, limit) };
    });

    app.post('/v1/environments/:id/rollback', { config: { permission: 'traffic.write', action: 'environment.rollback' } }, async (req, reply) => {
      const { id } = parse(IdParams, req.params, 'params');
      const body = parse(EnvironmentRollbackBody, req.body, 'body');
      await environmentOr404(sql, req, id);
      const source = body.version ? await deploymentByVersion(sql, id, body.version) : await deployments.getDeployment(sql, body.deploymentId!);
      if (!source || source.environmentId !== id) throw notFound('deployment', `${body.deploymentId} in environment ${id}`);
      const d = await rollbackTo(cmd, source, { force: body.force }, auditAlongside(req));
      return reply.status(202).send({ id: d.id, status: d.status, version: d.version, rollbackOf: source.id, rollbackOfVersion: source.version });
    });

    app.get('/v1/environments/:id/quarantine', READ, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      await environmentOr404(sql, req, id);
      const rows = await quarantine.listQuarantined(sql, id);
      return { environmentId: id, images: rows.map((r) => ({ image: r.image, reason: r.reason, deploymentId: r.deploymentId, createdAt: r.createdAt })) };
    });

    app.delete('/v1/environments/:id/quarantine/:image', { config: { permission: 'deployments.write', action: 'quarantine.release' } }, async (req) => {
      const { id, image } = parse(QuarantineParams, req.params, 'params');
      const env = await environmentOr404(sql, req, id);
      await withTx(sql, async (tx) => {
        if (!(await quarantine.releaseImage(tx, id, image))) throw notFound('quarantined image', image);
        await auditInTx(tx, req, { id: `${id}/${quarantine.quarantineKey(image)}`, workspaceId: env.workspaceId, projectId: env.projectId, environmentId: id });
      });
      return { environmentId: id, image: quarantine.quarantineKey(image), released: true };
    });
  };
}
