// Builds ctrl's fastify app: probes, metrics, error mapping. Route groups (public API, cluster
// API, events) register themselves through `routes`, so this file stays the skeleton.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from '../log';
import { ping, pendingMigrations, type Sql } from '../store';
import { errorHandler, notFoundHandler } from './error-handler';
import { healthRoutes, type ReadinessCheck } from './health';
import { createRegistry, instrumentHttp, metricsRoute, type Registry } from './metrics';
import { webRoutes } from '../web';

export interface CtrlAppDeps {
  sql: Sql;
  logger: Logger;
  registry?: Registry;
  /** Extra readiness checks (the workflow engine adds its own). */
  checks?: ReadinessCheck[];
  routes?: ((app: FastifyInstance) => void | Promise<void>)[];
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

export async function buildCtrlApp(deps: CtrlAppDeps): Promise<{ app: FastifyInstance; registry: Registry }> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Long-poll feed responses stay open up to their wait limit; keep sockets alive past it.
    keepAliveTimeout: 75_000,
    // Long polls have already been ended with their `end` line when the app closes (the feed
    // closes first); anything still open would hold shutdown for its whole keep-alive.
    forceCloseConnections: true,
    // Per-request access lines are off (metrics count requests); errors still log with the
    // request id, so one failing call can be followed.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    bodyLimit: 4 * 1024 * 1024,
    // fastify's default (100) answers longer path parameters with a bare 414 before any route
    // runs; ours validate ids themselves and answer 400 in the standard error shape.
    routerOptions: { maxParamLength: 256 },
  });
  const registry = deps.registry ?? createRegistry({ service: 'ctrl' });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  instrumentHttp(app, registry);
  const checks = [...databaseChecks(deps.sql), ...(deps.checks ?? [])];
  healthRoutes(app, () => checks);
  metricsRoute(app, registry);
  webRoutes(app);
  for (const r of deps.routes ?? []) await app.register(async (scope) => r(scope));
  return { app, registry };
}
