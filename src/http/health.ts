// Probes. /livez says the process is alive and serving (no dependencies: restarting a process
// because its database is down fixes nothing). /readyz runs every registered readiness check
// and answers 503 naming each failing one, so a load balancer stops routing and an operator
// sees which. The probe is unauthenticated: a check that throws answers with a generic reason,
// and its error (a driver's text with hosts, ports, users) goes to the log only.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ReadinessCheck } from '../health';

export type { ReadinessCheck };

/** How long one check may take before it counts as failed; probes must answer promptly. */
const CHECK_TIMEOUT_MS = 3000;

/** What /readyz says about a check that threw. */
export const CHECK_ERROR_REASON = 'error; details in the log';

async function runCheck(c: ReadinessCheck, log: FastifyBaseLogger): Promise<{ name: string; ok: boolean; reason?: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const reason = await Promise.race([
      c.check(),
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve(`timed out after ${CHECK_TIMEOUT_MS} ms`), CHECK_TIMEOUT_MS);
      }),
    ]);
    return reason === null ? { name: c.name, ok: true } : { name: c.name, ok: false, reason };
  } catch (err) {
    log.warn({ err, check: c.name }, 'readiness check failed');
    return { name: c.name, ok: false, reason: CHECK_ERROR_REASON };
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(app: FastifyInstance, checks: () => ReadinessCheck[]): void {
  app.get('/livez', async () => ({ status: 'ok' }));
  app.get('/readyz', async (req, reply) => {
    const results = await Promise.all(checks().map((c) => runCheck(c, req.log)));
    const ready = results.every((r) => r.ok);
    void reply.status(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'not ready', checks: results };
  });
}
