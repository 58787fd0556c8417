// Builds ctrl's fastify app: probes, metrics, error mapping. Route groups (public API, cluster
// API, events) register themselves through `routes`, so this file stays the skeleton.
import { randomBytes } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { CTRL_LIMIT_DEFAULTS, parseDuration } from '../config';
import type { Logger } from '../log';
import { ping, pendingMigrations, type Sql } from '../store';
import { unauthorized, validationError } from '../errors';
import { bearerToken } from './auth';
import { checkJsonBody } from '../sync/wire';
import { errorHandler, notFoundHandler } from './error-handler';
import { healthRoutes, type ReadinessCheck } from './health';
import { createRegistry, instrumentHttp, metricsRoute, type Registry } from './metrics';
import { webRoutes } from '../web';

/**
 * ctrl's accept queue. Node's default (511) overflowed when thousands of agents reconnected at
 * once (every long poll is its own connection): a dropped SYN costs its agent 1 to 7 s of
 * retransmits. The kernel caps it at net.core.somaxconn (4096 on current kernels).
 */
export const LISTEN_BACKLOG = 4096;

/** Connection limits (src/config.ts has their defaults and why). */
export interface ConnectionLimits {
  /** The whole request (headers and body) must arrive within this. */
  requestTimeoutMs: number;
  /** A socket silent both ways for this long is closed. */
  idleTimeoutMs: number;
  maxConnections: number;
}

export interface CtrlAppDeps {
  sql: Sql;
  logger: Logger;
  limits?: ConnectionLimits;
  registry?: Registry;
  /** Extra readiness checks (the workflow engine adds its own). */
  checks?: ReadinessCheck[];
  routes?: ((app: FastifyInstance) => void | Promise<void>)[];
  /** Hooks on the whole app, every route group included (the audit trail's onSend). */
  hooks?: ((app: FastifyInstance) => void)[];
  /**
   * Whether a bearer token is any credential ctrl accepts (admin, agent, API key). An unknown
   * route answers 401 without one and 404 with one, from the headers alone; without this
   * function every unknown route is a 401.
   */
  knownCredential?: (token: string) => Promise<boolean>;
}

export function databaseChecks(sql: Sql): ReadinessCheck[] {
  return [
    { name: 'database', check: async () => (await ping(sql), null) },
    {
      name: 'migrations',
      check: async () => {
        const pending = await pendingMigrations(sql);
        return pending.length ? `pending migrations: ${pending.join(', ')}` : null;
      },
    },
  ];
}

/**
 * onRequest of unknown routes: answered from the headers, before any body is read (fastify
 * would otherwise read and parse up to bodyLimit for a 404), and without a credential a 401,
 * so an unknown path tells a stranger nothing about which paths exist. A body still coming is
 * not drained: `connection: close` lets Node drop the socket after the answer.
 */
function unknownRouteGuard(knownCredential: CtrlAppDeps['knownCredential']) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!req.is404) return;
    if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) void reply.header('connection', 'close');
    const token = bearerToken(req);
    if (!token) throw unauthorized();
    if (!(knownCredential && (await knownCredential(token)))) throw unauthorized('invalid token');
    notFoundHandler(req, reply);
    return reply;
  };
}

/** What an app built without explicit limits (tests, tools) gets: the configuration defaults. */
const DEFAULT_LIMITS: ConnectionLimits = {
  requestTimeoutMs: parseDuration(CTRL_LIMIT_DEFAULTS.requestTimeout)!,
  idleTimeoutMs: parseDuration(CTRL_LIMIT_DEFAULTS.idleTimeout)!,
  maxConnections: CTRL_LIMIT_DEFAULTS.maxConnections,
};

/**
 * How often Node looks for requests past their timeout. Its default (30 s) would let a stalled
 * request outlive a 30 s limit by up to twice; a quarter of the limit, within [100 ms, 5 s],
 * keeps the overshoot small at the cost of one pass over the connection list per tick.
 */
const checkingInterval = (requestTimeoutMs: number) => Math.min(5_000, Math.max(100, Math.floor(requestTimeoutMs / 4)));

export async function buildCtrlApp(deps: CtrlAppDeps): Promise<{ app: FastifyInstance; registry: Registry }> {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Headers and body must arrive within the request timeout; the response may take as long as
    // it needs (feed long polls, sentinel deploys that wait, the WebSocket).
    requestTimeout: limits.requestTimeoutMs,
    http: {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: checkingInterval(limits.requestTimeoutMs),
    },
    connectionTimeout: limits.idleTimeoutMs,
    // Long-poll feed responses stay open up to their wait limit; keep sockets alive past it.
    keepAliveTimeout: 75_000,
    // Long polls have already been ended with their `end` line when the app closes (the feed
    // closes first); anything still open would hold shutdown for its whole keep-alive.
    forceCloseConnections: true,
    // Per-request access lines are off (metrics count requests); errors still log with the
    // request id, so one failing call can be followed.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    // Random, not fastify's per-replica counter: request ids reach audit rows a key reads, and
    // the gap between two of its own counted every other caller's requests meanwhile. 64 bits:
    // unique enough to follow one call through logs and rows.
    genReqId: () => `req-${randomBytes(8).toString('hex')}`,
    bodyLimit: 4 * 1024 * 1024,
    // fastify's default (100) answers longer path parameters with a bare 414 before any route
    // runs; ours validate ids themselves and answer 400 in the standard error shape.
    routerOptions: { maxParamLength: 256 },
  });
  // Past the cap Node closes new sockets on accept, before any of their bytes are read.
  app.server.maxConnections = limits.maxConnections;
  const registry = deps.registry ?? createRegistry({ service: 'ctrl' });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  app.addHook('onRequest', unknownRouteGuard(deps.knownCredential));
  // Every JSON body of every route (public and cluster, present and future) is checked whole
  // before its schema reads it: no string or key PostgreSQL or a log cannot take (safe.ts).
  app.addHook('preValidation', async (req) => {
    if (req.body === undefined || req.body === null || typeof req.body !== 'object') return;
    const bad = checkJsonBody(req.body);
    if (bad.length) throw validationError(`invalid request body: ${bad.map((b) => b.field).join(', ')}`, bad);
  });
  instrumentHttp(app, registry);
  const checks = [...databaseChecks(deps.sql), ...(deps.checks ?? [])];
  healthRoutes(app, () => checks);
  metricsRoute(app, registry);
  webRoutes(app);
  for (const h of deps.hooks ?? []) h(app);
  for (const r of deps.routes ?? []) await app.register(async (scope) => r(scope));
  return { app, registry };
}
