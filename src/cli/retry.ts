// When the client commands send a call again: ctrl or its database away for a moment (a
// replica restarting, a PostgreSQL failover: ctrl answers 503 while it has no primary, and a
// connection may break mid-call). Only calls that are safe to repeat are retried: reads,
// level-triggered writes (stop, start) and creates that carry an Idempotency-Key, which ctrl
// answers with the first call's result (src/http/idempotency.ts). Pure, table-tested.
import { randomBytes } from 'node:crypto';
import { ApiError, CliError } from './errors';

/**
 * How long one command keeps trying: a Patroni failover takes its leader TTL (30 s by
 * default) plus a few seconds for HAProxy and PgBouncer to follow, so a minute rides one out
 * with room, and a ctrl that is really gone still fails the command within a minute.
 */
export const RETRY_BUDGET_MS = 60_000;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 4_000;

/**
 * A connection that broke under a call (ctrl's process or its proxy went away mid-call). A
 * connection refused or never made is not retried: that is a wrong address or no ctrl at all,
 * which the command says at once with its hint; so is a call that already waited out the
 * request timeout.
 */
const TRANSIENT_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);
/** Answers that mean "not now": a proxy without a healthy ctrl (502, 504), ctrl without its database (503). */
const TRANSIENT_STATUSES = new Set([502, 503, 504]);

/** True when sending the same call again later can succeed. */
export function isTransient(err: unknown): boolean {
  if (err instanceof ApiError) return TRANSIENT_STATUSES.has(err.status);
  if (err instanceof CliError && err.code === 'ERR_CLI_UNREACHABLE') {
    const code = (err.cause as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' && TRANSIENT_SOCKET_CODES.has(code);
  }
  return false;
}

/** The wait before try `attempt` (1 = the first retry): doubling, capped, with full jitter so
 *  clients that failed together do not come back together. `random` is injected for tests. */
export function retryDelay(attempt: number, random: () => number = Math.random): number {
  const cap = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (attempt - 1));
  return Math.round(cap / 2 + (random() * cap) / 2);
}

/** A fresh Idempotency-Key for one command's call: 128 random bits. */
export const newIdempotencyKey = (): string => randomBytes(16).toString('base64url');
