// Probes. /livez says the process is alive and serving (no dependencies: restarting a process
// because its database is down fixes nothing). /readyz runs every registered readiness check
// and answers 503 naming each failing one, so a load balancer stops routing and an operator
// sees why.
import type { FastifyInstance } from 'fastify';
import type { ReadinessCheck } from '../health';

export type { ReadinessCheck };

/** How long one check may take before it counts as failed; probes must answer promptly. */
const CHECK_TIMEOUT_MS = 3000;

async function runCheck(c: ReadinessCheck): Promise<{ name: string; ok: boolean; reason?: string }> {
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
    return { name: c.name, ok: false, reason: (err as Error).message || String(err) };
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(app: FastifyInstance, checks: () => ReadinessCheck[]): void {
  app.get('/livez', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const results = await Promise.all(checks().map(runCheck));
    const ready = results.every((r) => r.ok);
    void reply.status(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'not ready', checks: results };
  });
}
