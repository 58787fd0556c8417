// Audit retention (--audit-retention, default 90d): every replica deletes rows past it in
// batches, so one statement never holds many rows' locks next to live writes. Racing replicas
// delete disjoint or already-deleted rows; nothing to coordinate.
import type { Logger } from '../log';
import { audit, type Sql } from '../store';

/** Rows per delete: short statements next to live inserts. */
const BATCH = 10_000;
/** Rows only need to go eventually; an hour keeps the sweep invisible. */
const DEFAULT_EVERY_MS = 3_600_000;

/** Deletes every row older than the retention now; returns how many. */
export async function cleanupAudit(sql: Sql, retentionMs: number): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await audit.deleteOlderThan(sql, retentionMs, BATCH);
    total += n;
    if (n < BATCH) return total;
  }
}

export function startAuditCleanup(sql: Sql, logger: Logger, opts: { retentionMs: number; everyMs?: number }): () => void {
  const timer = setInterval(() => {
    cleanupAudit(sql, opts.retentionMs)
      .then((n) => n && logger.info({ deleted: n }, 'audit cleanup done'))
      .catch((err: unknown) => logger.warn({ err }, 'audit cleanup failed'));
  }, opts.everyMs ?? DEFAULT_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
