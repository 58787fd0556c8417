// /v1/sentinels: list, and deploy one through SentinelService (merge semantics). A key lists and
// deploys the sentinels of its scope only; a deploy's audit row commits with the workflow's start.
// Sentinel images and sizes are the platform's (issue 32): a sentinel runs with the platform's
// credentials in the shared namespace, on the nodes every tenant's sentinels share, so a key may
// scale or restart its sentinel but not choose its image or its pods' CPU and memory, and ctrl's
// --sentinel-images (src/image-allow.ts) bounds what any credential may set.
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors';
import { imageAllowed, type ImageRule } from '../../image-allow';
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

/** The refusal of a sentinel image outside --sentinel-images, or null (a fleet rollout's too). */
export function sentinelImageRefusal(rules: readonly ImageRule[], image: string): AppError | null {
  if (imageAllowed(rules, image)) return null;
  return new AppError('ERR_FORBIDDEN', `image ${image} is not one ctrl lets sentinels run (--sentinel-images)`, { details: [{ field: 'image', message: 'outside --sentinel-images' }] });
}

/**
 * Fields of a sentinel deploy only an unscoped credential may set. The image runs with the
 * platform's credentials; CPU and memory are room on the sentinel nodes the platform plans and
 * pays for, shared by every tenant's sentinels (a key once asked 100 × 256 cores and 1 TiB).
 */
const PLATFORM_FIELDS = ['image', 'cpuMillicores', 'memoryMib'] as const;

/** The 403 for the first platform field a key's body sets, or null. Pure. */
export function keySentinelRefusal(body: Partial<Record<(typeof PLATFORM_FIELDS)[number], unknown>>): AppError | null {
  const field = PLATFORM_FIELDS.find((f) => body[f] !== undefined);
  if (!field) return null;
  const what = field === 'image' ? 'choose its image' : 'size its pods';
  return new AppError('ERR_FORBIDDEN', `a scoped key may scale or restart its sentinel but not ${what}: sentinel images and sizes are set by the admin token or a fleet rollout`, {
    details: [{ field, message: 'not settable by a scoped key' }],
  });
}

export function sentinelRoutes(deps: { workflows: Workflows; engine: Engine; sentinelImages?: readonly ImageRule[] | undefined }) {
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
      const keyRefused = principalOf(req).type === 'key' ? keySentinelRefusal(body) : null;
      if (keyRefused) throw keyRefused;
      if (body.image !== undefined) {
        const refused = sentinelImageRefusal(deps.sentinelImages ?? [], body.image);
        if (refused) throw refused;
      }
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
