// One step's attempts: the step body retried with backoff (p-retry) up to its maxAttempts, a
// TerminalError ending it at once. A database outage under the body is not the step's failure:
// it is waited out (backoff, no limit) and costs no attempt. What counts as an outage is the
// one table in src/store/retryable.ts, narrowed to errors that came from PostgreSQL or that
// arrive while the engine's own database does not answer (a refused connection to some other
// service while the database is fine is the step's own failure).
import { setTimeout as delay } from 'node:timers/promises';
import pRetry, { AbortError } from 'p-retry';
import type { Logger } from '../../log';
import type { Sql } from '../../store/db';
import { isRetryableDbError } from '../../store/retryable';
import { LeaseLostError, TerminalError, toFailure, type StoredFailure } from './errors';
import { backoffMs, fromPostgres } from './outage';
import type { RunOptions } from './types';

/** Default attempts of a step: enough to ride out a restart of a dependency, bounded so a
 *  broken step fails visibly instead of retrying forever. */
const DEFAULT_MAX_ATTEMPTS = 10;
/** Default first retry delay: short enough for fast tests, long enough not to hammer. */
const DEFAULT_INITIAL_DELAY_MS = 100;
/** Default retry delay cap: keeps a retrying step responsive to a recovered dependency. */
const DEFAULT_MAX_DELAY_MS = 10_000;

/** What a step's attempts need from the execution running it. */
export interface StepHost {
  sql: Sql;
  logger: Logger;
  invocationId: string;
  /** The execution was dropped (lease lost, engine stopped): stop waiting. */
  gone(): boolean;
  /** Records the lost lease on the execution and throws. */
  lost(): never;
  /** An attempt failed and another follows (engine_step_retries_total). */
  retrying(): void;
}

/** Runs the body until it succeeds, fails terminally or runs out of attempts; the outcome is
 *  what the journal records (an encoded value or a failure). */
export async function attemptStep(
  host: StepHost,
  name: string,
  opts: RunOptions,
  fn: (attempt: number) => Promise<string>,
): Promise<{ value: string | null; failure: StoredFailure | null }> {
  const maxAttempts = Math.max(1, opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
  let made = 0;
  const attempt = (n: number): Promise<string> => {
    // A dropped execution starts no further attempt of a body another owner now runs.
    if (host.gone()) throw new AbortError(new LeaseLostError(host.invocationId));
    made = n;
    return bodyOutlivingOutages(host, name, () => fn(n));
  };
  // The first attempt runs without p-retry's machinery (most steps succeed at once, and a
  // step's JavaScript is the engine's hot path); its failure is handed to p-retry as the
  // failure of p-retry's own first attempt, so what follows (backoff, giving up) is p-retry's.
  let first: unknown;
  try {
    return { value: await attempt(1), failure: null };
  } catch (err) {
    first = err;
  }
  try {
    const value = await pRetry(
      async (n) => {
        if (n === 1) throw first;
        return attempt(n);
      },
      {
        retries: maxAttempts - 1,
        minTimeout: opts.initialDelayMs ?? DEFAULT_INITIAL_DELAY_MS,
        maxTimeout: opts.maxDelayMs ?? DEFAULT_MAX_DELAY_MS,
        factor: opts.factor ?? 2,
        onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
          host.logger.warn({ invocationId: host.invocationId, step: name, attemptNumber, retriesLeft, err: error.message }, 'engine step attempt failed');
          if (retriesLeft > 0) host.retrying();
        },
      },
    );
    return { value, failure: null };
  } catch (err) {
    const e = err instanceof AbortError ? err.originalError : err;
    if (e instanceof LeaseLostError) {
      // Dropped meanwhile (no write was refused): stop without claiming one was.
      if (host.gone()) throw e;
      host.lost();
    }
    if (e instanceof TerminalError) return { value: null, failure: toFailure(e) };
    // p-retry gives up early on programming errors (TypeError), so count what really ran.
    const message = `step "${name}" failed after ${made} attempt(s): ${(e as Error).message ?? String(e)}`;
    return { value: null, failure: { name: 'TerminalError', message, code: 'ERR_ENGINE_STEP_FAILED' } };
  }
}

/** One attempt: the body, run again after each outage it met until it succeeds or fails. */
async function bodyOutlivingOutages(host: StepHost, name: string, body: () => Promise<string>): Promise<string> {
  for (let outages = 0; ; outages++) {
    try {
      return await body();
    } catch (err) {
      if (err instanceof AbortError) throw err;
      // TerminalError ends the step at once; a lost lease ends the whole execution.
      if (err instanceof TerminalError || err instanceof LeaseLostError) throw new AbortError(err);
      // The database went away under the step: not the step's failure, and no attempt.
      if (await isOutage(host, err)) {
        await waitOut(host, name, outages, err);
        continue;
      }
      throw err instanceof Error ? err : new Error(String(err));
    }
  }
}

async function isOutage(host: StepHost, err: unknown): Promise<boolean> {
  if (!isRetryableDbError(err)) return false;
  return fromPostgres(err) || !(await databaseAnswers(host.sql));
}

async function databaseAnswers(sql: Sql): Promise<boolean> {
  try {
    await sql`SELECT 1`;
    return true;
  } catch {
    return false;
  }
}

/** Waits (backoff, no limit) until the database answers; aborts if the execution is gone. */
async function waitOut(host: StepHost, step: string, outages: number, err: unknown): Promise<void> {
  if (outages === 0) host.logger.warn({ invocationId: host.invocationId, step, err: (err as Error).message }, 'engine step waiting for the database');
  for (let n = outages; ; n++) {
    await delay(backoffMs(n));
    if (host.gone()) throw new AbortError(new LeaseLostError(host.invocationId));
    if (await databaseAnswers(host.sql)) return;
  }
}
