// krane's own small HTTP server: /livez, /readyz, /metrics, and POST /gc/confirm for the
// operator's confirmation of a held GC pass (no other API; krane pulls from ctrl).
// Readiness names each failing part: the status watches have not completed a list, or the
// status reporter's circuit to ctrl is open.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from '../log';
import { unauthorized } from '../errors';
import { bearerToken, tokensEqual } from './auth';
import { errorHandler, notFoundHandler } from './error-handler';
import { healthRoutes, type ReadinessCheck } from './health';
import { metricsRoute, type Registry } from './metrics';

export interface KraneAppDeps {
  logger: Logger;
  registry: Registry;
  checks: ReadinessCheck[];
  /**
   * POST /gc/confirm (what `unkey-infra krane gc --confirm` calls): lifts the GC brake for what
   * it holds. Guarded by krane's own agent token, the one secret an operator of this krane has.
   */
  gcConfirm?: { token: string; confirm(): number };
}

export function buildKraneApp(deps: KraneAppDeps): FastifyInstance {
  // Probes and scrapes arrive every few seconds; logging each at info would drown krane's own
  // lines, so the server's logger starts at warn (errors still show).
  const app = Fastify({ loggerInstance: deps.logger.child({ part: 'http' }, { level: 'warn' }) as FastifyBaseLogger });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  healthRoutes(app, () => deps.checks);
  metricsRoute(app, deps.registry);
  if (deps.gcConfirm) gcConfirmRoute(app, deps.gcConfirm);
  return app;
}

function gcConfirmRoute(app: FastifyInstance, gc: NonNullable<KraneAppDeps['gcConfirm']>): void {
  // A scope of its own, so the token check (before the body is read) guards only this route.
  void app.register(async (scope) => {
    scope.addHook('onRequest', async (req) => {
      const token = bearerToken(req);
      if (!token || !tokensEqual(token, gc.token)) throw unauthorized("confirming krane's gc needs krane's agent token");
    });
    scope.post('/gc/confirm', async (req) => {
      const approved = gc.confirm();
      req.log.warn({ approved }, 'gc confirmed by an operator');
      return { approved };
    });
  });
}
