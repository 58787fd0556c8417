// Waiting out the database. The engine's own bookkeeping (journal writes, suspend, finish,
// resume reads) and a step body that fails because the database is away are not failures of
// the handler: they wait, with backoff and no limit, until the database answers again, and
// never reach handler code or count as a step's attempt. What is retryable is decided by the
// one table in src/store/retryable.ts.
import { setTimeout as delay } from 'node:timers/promises';
import postgres from 'postgres';
import type { Logger } from '../../log';
import { isRetryableDbError } from '../../store/retryable';

/** First pause after a failure: a terminated connection is usually replaced at once. */
const FIRST_DELAY_MS = 50;
/** Cap: the engine notices the database's return within a second, at one try a second per waiter. */
const MAX_DELAY_MS = 1_000;

export function backoffMs(failures: number): number {
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(failures, 16));
}

/** Codes postgres.js gives a connection it lost (the server's own failures carry SQLSTATEs). */
const CLIENT_CONNECTION_CODES: ReadonlySet<string> = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT']);

/** True when the error was raised by the PostgreSQL client (a SQLSTATE from the server, or a
 *  connection postgres.js lost) rather than by some other peer a step talks to. */
export function fromPostgres(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof postgres.PostgresError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CLIENT_CONNECTION_CODES.has(code)) return true;
  }
  return false;
}

export interface WaitOptions {
  /** Checked before every retry: an error to give up with (the execution lost its lease, the
   *  engine is stopping), or null to keep waiting. */
  abort: () => Error | null;
  logger: Logger;
  /** Log fields naming what waits (invocationId, operation). */
  fields: Record<string, unknown>;
}

/**
 * Runs `op` until it answers. A retryable database error (the table) is retried after a
 * backoff, for as long as it takes; any other error is thrown at once. `op` learns whether it
 * is a retry: a write whose answer was lost may have committed, and must then recognise its own
 * result instead of reporting a conflict. The healthy path is one call and one try/catch.
 */
export async function untilAnswered<T>(op: (retry: boolean) => Promise<T>, o: WaitOptions): Promise<T> {
  try {
    return await op(false);
  } catch (err) {
    if (!isRetryableDbError(err)) throw err;
    o.logger.warn({ ...o.fields, err: (err as Error).message }, 'engine waiting for the database');
  }
  for (let failures = 0; ; failures++) {
    await delay(backoffMs(failures));
    const stop = o.abort();
    if (stop) throw stop;
    try {
      const r = await op(true);
      o.logger.info({ ...o.fields, retries: failures + 1 }, 'engine reached the database again');
      return r;
    } catch (err) {
      if (!isRetryableDbError(err)) throw err;
    }
  }
}
