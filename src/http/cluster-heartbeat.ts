// POST /v1/cluster/heartbeat: krane's sign of life (every 10 s and after each committed
// cursor). Agent tokens only, and only for the token's own region (403 otherwise). The leader's
// heartbeat is recorded (last seen, agent id/version, cursor, object counts) and moves the
// region online at once; a standby replica's is acknowledged and not recorded, so the region's
// liveness and lag always describe the agent that applies changes.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { issuesToDetails, validationError } from '../errors';
import type { Sql } from '../store/db';
import { recordHeartbeat } from '../store/regions';
import { parseCursor } from '../sync/cursor';
import { Heartbeat } from '../sync/liveness';
import type { RegionRegistry } from '../workflow/regions';
import { assertAgentRegion, type AgentAuth } from './auth';

export interface ClusterHeartbeatDeps {
  sql: Sql;
  /** The process's one AgentAuth (shared with the other cluster routes). */
  auth: AgentAuth;
  regions: RegionRegistry;
}

/**
 * Counts open GET /v1/cluster/changes streams as signs of life. Call in the feed routes' scope
 * after they are added, so the hook runs after their agent auth has set the request's region.
 */
export function trackFeedStreams(app: FastifyInstance, regions: RegionRegistry): void {
  app.addHook('preHandler', async (req, reply) => {
    const region = req.agentRegion;
    if (!region || req.method !== 'GET' || !req.url.startsWith('/v1/cluster/changes')) return;
    regions.streamOpened(region);
    // The response's close fires once per poll, when the stream ends or the agent hangs up.
    reply.raw.once('close', () => regions.streamClosed(region));
  });
}

export function clusterHeartbeatRoutes(deps: ClusterHeartbeatDeps) {
  return (app: FastifyInstance) => {
    // onRequest: the token is checked before the body is read.
    app.addHook('onRequest', deps.auth.onRequest);
    app.post('/v1/cluster/heartbeat', async (req: FastifyRequest) => {
      const r = Heartbeat.safeParse(req.body ?? {});
      if (!r.success) throw validationError('invalid heartbeat', issuesToDetails(r.error.issues, 'body.'));
      const hb = r.data;
      assertAgentRegion(req, hb.region);
      // Lag is counted past this cursor in SQL: only a well-formed one may be stored.
      if (hb.cursor !== undefined) parseCursor(hb.cursor);
      if (!hb.leader) return { recorded: false };
      await recordHeartbeat(deps.sql, {
        region: hb.region,
        agentId: hb.agentId,
        version: hb.version,
        leader: hb.leader,
        cursor: hb.cursor ?? null,
        objects: hb.objects,
        lastFullSyncAt: hb.lastFullSyncAt ? new Date(hb.lastFullSyncAt) : null,
        ...(hb.drift ? { drift: hb.drift } : {}),
      });
      await deps.regions.settle(hb.region);
      return { recorded: true };
    });
  };
}
