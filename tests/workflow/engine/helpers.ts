// Shared helpers for engine tests: a quiet logger and an engine with short timings, stopped
// when the test file ends.
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

/** The one poller and deadline (tests/helpers/wait.ts), re-exported under the names these
 *  tests import. */
export { waitFor, within as withDeadline } from '../../helpers/wait';
