// The public API (/v1, admin token): deployments, traffic, sentinels, fleet rollouts, invocations, the live event
// WebSocket, and the OpenAPI document. Bodies, queries and params are validated with the zod
// schemas in schemas.ts before any handler writes: a 400 names every bad field. Long-running
// work is handed to workflows (src/workflow); handlers return as soon as it is durable.
import websocket from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized } from '../../errors';
import type { OutboundPolicy, Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { adminAuth, tokensEqual } from '../auth';
import { deploymentRoutes } from './deployments';
import type { RegionRegistry } from '../../workflow/regions';
import { EVENTS_PATH, eventRoutes, subprotocolToken, websocketServerOptions, type EventHub, type EventSocketOptions } from './events';
import { invocationRoutes } from './invocations';
import { sentinelRoutes } from './sentinels';
import { openApiRoute } from './openapi';
import { rolloutRoutes } from './rollouts';
import { trafficRoutes } from './traffic';

export { createEventHub, type EventHub, type EventSocketOptions } from './events';
export { openApiDocument } from './openapi';
export * from './schemas';

export interface PublicApiDeps {
  adminToken: string;
  workflows: Workflows;
  engine: Engine;
  hub: EventHub;
  /** Where outbound requests (Slack webhooks) may go; checked at the API and again at send time. */
  outbound: OutboundPolicy;
  /** Region liveness shown in deployment details (absent in tests that run without a registry). */
  regions?: RegionRegistry;
  /** The event socket's ping interval and per-credential cap (tests shorten them). */
  events?: EventSocketOptions;
}


const hasBody = (req: FastifyRequest) => Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;

/**
 * Admin auth as an onRequest hook: it runs before fastify reads or parses a body, so an
 * unauthenticated caller costs no body parsing. A refused request that still has a body
 * coming is answered with `connection: close`, so Node closes the socket instead of reading and
 * discarding the rest to keep the connection alive.
 */
function adminGuard(adminToken: string) {
  const checkHeader = adminAuth(adminToken);
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    try {
      // The event socket may carry the token as a subprotocol (browsers); never in the URL.
      const fromProtocol = req.routeOptions.url === EVENTS_PATH && !req.headers.authorization ? subprotocolToken(req) : undefined;
      if (fromProtocol === undefined) await checkHeader(req);
      else if (!tokensEqual(fromProtocol, adminToken)) throw unauthorized('invalid admin token');
    } catch (err) {
      if (hasBody(req)) void reply.header('connection', 'close');
      throw err;
    }
  };
}

export function publicApiRoutes(deps: PublicApiDeps) {
  return async (app: FastifyInstance) => {
    openApiRoute(app);
    await app.register(async (v1) => {
      await v1.register(websocket, { options: websocketServerOptions });
      v1.addHook('onRequest', adminGuard(deps.adminToken));
      deploymentRoutes(deps)(v1);
      sentinelRoutes(deps)(v1);
      invocationRoutes(deps)(v1);
      rolloutRoutes(deps)(v1);
      trafficRoutes(deps)(v1);
      eventRoutes(deps)(v1);
    });
  };
}
