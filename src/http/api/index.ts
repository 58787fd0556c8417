// The public API (/v1, admin token): deployments, sentinels, fleet rollouts, invocations, the live event
// WebSocket, and the OpenAPI document. Bodies, queries and params are validated with the zod
// schemas in schemas.ts before any handler writes: a 400 names every bad field. Long-running
// work is handed to workflows (src/workflow); handlers return as soon as it is durable.
import websocket from '@fastify/websocket';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { unauthorized } from '../../errors';
import type { Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { bearerToken, tokensEqual } from '../auth';
import { deploymentRoutes } from './deployments';
import { eventRoutes, type EventHub } from './events';
import { invocationRoutes } from './invocations';
import { sentinelRoutes } from './sentinels';
import { openApiRoute } from './openapi';
import { rolloutRoutes } from './rollouts';

export { createEventHub, type EventHub } from './events';
export { openApiDocument } from './openapi';
export * from './schemas';

export interface PublicApiDeps {
  adminToken: string;
  workflows: Workflows;
  engine: Engine;
  hub: EventHub;
}

/** Subprotocol prefix carrying a bearer token (base64url) on a browser's WebSocket, which cannot
 *  set headers: it keeps the token out of URLs and access logs (the scheme Kubernetes uses). */
const WS_TOKEN_PROTOCOL = 'base64url.bearer.';

function websocketToken(req: FastifyRequest): string | undefined {
  const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const p = offered.find((x) => x.startsWith(WS_TOKEN_PROTOCOL));
  return p ? Buffer.from(p.slice(WS_TOKEN_PROTOCOL.length), 'base64url').toString('utf8') : undefined;
}

/** Admin auth; the WebSocket also takes the token as a subprotocol (browsers) or ?token=. */
function adminOrQueryToken(adminToken: string) {
  return async (req: FastifyRequest): Promise<void> => {
    const ws = req.url.startsWith('/v1/events');
    const token = bearerToken(req) ?? (ws ? (websocketToken(req) ?? (req.query as { token?: string }).token) : undefined);
    if (!token) throw unauthorized();
    if (!tokensEqual(token, adminToken)) throw unauthorized('invalid admin token');
  };
}

export function publicApiRoutes(deps: PublicApiDeps) {
  return async (app: FastifyInstance) => {
    openApiRoute(app);
    await app.register(async (v1) => {
      await v1.register(websocket);
      v1.addHook('preHandler', adminOrQueryToken(deps.adminToken));
      deploymentRoutes(deps)(v1);
      sentinelRoutes(deps)(v1);
      invocationRoutes(deps)(v1);
      rolloutRoutes(deps)(v1);
      eventRoutes(deps)(v1);
    });
  };
}
