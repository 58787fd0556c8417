// Shared helpers for engine tests: a quiet logger and an engine with short timings, stopped
// when the test file ends.
import { until } from '../../helpers/wait';
import { after } from 'node:test';
import { createLogger } from '../../../src/log';
import type { Sql } from '../../../src/store/db';
import { createEngine, type Engine, type EngineOptions } from '../../../src/workflow/engine';

export const quiet = createLogger('silent');

export function testEngine(sql: Sql, opts: Partial<EngineOptions> = {}): Engine {
  const engine = createEngine({ sql, logger: quiet, leaseMs: 2_000, pollMs: 100, stealAfterMs: 200, stopTimeoutMs: 500, ...opts });
  after(() => engine.stop());
  return engine;
}

export const waitFor = <T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 10_000) => until(fn, timeoutMs, what);

/** Rejects when `p` has not settled within `ms`: a hang fails the test instead of stalling it. */
export function withDeadline<T>(p: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer!: NodeJS.Timeout;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
