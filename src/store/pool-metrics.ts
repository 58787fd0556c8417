// How long a query waits for a connection of the pool, measured at scrape time: the probe takes
// a connection the way a query would (postgres.js's reserve, which queues behind busy ones) and
// gives it back at once. The driver keeps its queue to itself, so this is what can be seen of
// it; a saturated pool shows as waits at every scrape (the alert UnkeyDatabasePoolWaits).
import client from 'prom-client';
import type { Sql } from './db';

/** A scrape waits at most this for a connection, well inside Prometheus's 10 s scrape timeout;
 *  a pool that busy reports this ceiling. */
const PROBE_TIMEOUT_MS = 5_000;

export function registerPoolMetrics(registry: client.Registry, sql: Sql): void {
  new client.Gauge({
    name: 'db_pool_acquire_seconds',
    help: 'How long the last scrape waited for a free connection of the database pool (5 at most: the probe gives up there)',
    registers: [registry],
    async collect() {
      const started = performance.now();
      const reserving = sql.reserve();
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), PROBE_TIMEOUT_MS)));
      try {
        const conn = await Promise.race([reserving, gaveUp]);
        if (conn) conn.release();
        // Still queued: hand the connection back whenever it comes.
        else reserving.then((c) => c.release(), () => {});
        this.set(conn ? (performance.now() - started) / 1000 : PROBE_TIMEOUT_MS / 1000);
      } catch {
        // The database does not answer: that is /readyz's to say, not a wait for the pool.
      } finally {
        clearTimeout(timer);
      }
    },
  });
}
