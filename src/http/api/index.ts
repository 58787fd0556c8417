// The public API (/v1; the admin token or a scoped API key, src/http/permissions.ts):
// deployments, traffic, sentinels, fleet rollouts, invocations, the live event WebSocket,
// tenancy, keys, the audit trail, and the OpenAPI document. Bodies, queries and params are
// validated with the zod schemas in schemas.ts before any handler writes: a 400 names every bad
// field. Long-running work is handed to workflows (src/workflow); handlers return as soon as it
// is durable. Tenants are kept apart here (issue 32, SECURITY.md's Tenant isolation): scope
// before existence (scope.ts), a key's sentinel image refused (sentinels.ts), chosen ids and
// hostnames checked (tenancy-schemas.ts, tenancy.ts), key caps and trees (keys.ts), event
// sockets per credential and per workspace (socket-quota.ts). Each route's config says what a
// key needs (permission, unscoped) and, for a change, its audit action; handlers write the
// audit row in the change's transaction (src/http/audit.ts). What every route answers is part
// of the contract too: strict zod schemas (openapi-responses.ts, openapi-responses-tenancy.ts),
// named in the OpenAPI document's components (openapi-refs.ts), from which the CLI's and the
// web view's types are generated.
import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import type { OutboundPolicy, Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import type { KeyAuth } from '../keys';
import type { ImageRule } from '../../image-allow';
import { publicGuard } from './guard';
import { tenancyRoutes } from './tenancy';
import { keyRoutes } from './keys';
import { auditRoutes } from './audit';
import { deploymentRoutes } from './deployments';
import type { RegionRegistry } from '../../workflow/regions';
import { eventRoutes, websocketServerOptions, type EventHub, type EventSocketOptions } from './events';
import { invocationRoutes } from './invocations';
import { sentinelRoutes } from './sentinels';
import { openApiRoute } from './openapi';
import { rolloutRoutes } from './rollouts';
import { trafficRoutes } from './traffic';
import { versionRoutes } from './versions';
import { featureRoutes } from './features';

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
  /** Scoped API keys: authentication, revocation (it closes the key's open calls), rate limit. */
  keys: KeyAuth;
  /** The event socket's ping interval and per-credential cap (tests shorten them). */
  events?: EventSocketOptions;
  /** Images sentinels may run (--sentinel-images); empty or absent: any an unscoped credential sets. */
  sentinelImages?: readonly ImageRule[] | undefined;
  /** A workspace's caps (live keys: KEYS_PER_WORKSPACE unless given). */
  tenantCaps?: { keysPerWorkspace?: number | undefined } | undefined;
}

export function publicApiRoutes(deps: PublicApiDeps) {
  return async (app: FastifyInstance) => {
    openApiRoute(app);
    await app.register(async (v1) => {
      await v1.register(websocket, { options: websocketServerOptions });
      v1.addHook('onRequest', publicGuard({ adminToken: deps.adminToken, keys: deps.keys }));
      deploymentRoutes(deps)(v1);
      sentinelRoutes(deps)(v1);
      invocationRoutes(deps)(v1);
      rolloutRoutes(deps)(v1);
      trafficRoutes(deps)(v1);
      eventRoutes(deps)(v1);
      tenancyRoutes(deps)(v1);
      keyRoutes(deps)(v1);
      auditRoutes(deps)(v1);
      versionRoutes(deps.workflows.commands)(v1);
      featureRoutes(deps.workflows.commands)(v1);
    });
  };
}
