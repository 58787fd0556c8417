// krane's own small HTTP server: /livez, /readyz and /metrics (no API; krane pulls from ctrl).
// Readiness names each failing part: the status watches have not completed a list, or the
// status reporter's circuit to ctrl is open.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from '../log';
import { errorHandler, notFoundHandler } from './error-handler';
import { healthRoutes, type ReadinessCheck } from './health';
import { metricsRoute, type Registry } from './metrics';

export interface KraneAppDeps {
  logger: Logger;
  registry: Registry;
  checks: ReadinessCheck[];
}

export function buildKraneApp(deps: KraneAppDeps): FastifyInstance {
  // Probes and scrapes arrive every few seconds; logging each at info would drown krane's own
  // lines, so the server's logger starts at warn (errors still show).
  const app = Fastify({ loggerInstance: deps.logger.child({ part: 'http' }, { level: 'warn' }) as FastifyBaseLogger });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  healthRoutes(app, () => deps.checks);
  metricsRoute(app, deps.registry);
  return app;
}
