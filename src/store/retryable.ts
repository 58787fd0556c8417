// Which database failures are worth waiting out. One table, read by everything that decides
// between "retry later" and "this failed" (the engine above all: an outage must never reach
// workflow code as a step failure). Decided by SQLSTATE class or exact code and by Node's and
// postgres.js's connection error codes, never by matching messages.

/** SQLSTATE classes (first two characters) where the statement may succeed if tried again. */
const RETRYABLE_SQLSTATE_CLASSES: ReadonlySet<string> = new Set([
  '08', // connection exception: the connection failed or was refused
  '40', // transaction rollback: serialization failure, deadlock
  '53', // insufficient resources: too many connections, out of memory or disk
  '57', // operator intervention: shutdown, crash restart, cannot connect now, statement cancelled
  '58', // system error: I/O failure on the server
]);

/** Individual SQLSTATEs outside those classes that are transient. */
const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set([
  '55P03', // lock_not_available (NOWAIT, lock_timeout)
  '25P03', // idle_in_transaction_session_timeout: the server dropped the session
]);

/** Errors of the socket or the client library: the database was not reached or went away. */
const RETRYABLE_CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND', // a DNS name that flaps during a failover
  // postgres.js
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** True when `err` (or an error it wraps as `cause`) is a database or connection failure that
 *  trying again later can fix. */
export function isRetryableDbError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    // A connect attempt to several addresses fails with an AggregateError of the reasons.
    if (e instanceof AggregateError && e.errors.some(isRetryableDbError)) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    if (RETRYABLE_CONNECTION_CODES.has(code)) return true;
    if (SQLSTATE.test(code) && (RETRYABLE_SQLSTATE_CLASSES.has(code.slice(0, 2)) || RETRYABLE_SQLSTATES.has(code))) return true;
  }
  return false;
}
