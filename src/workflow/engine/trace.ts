// Tracing as the engine carries it, knowing no spans: an opaque carrier (TraceHooks, types.ts;
// src/tracing implements it) captured when an invocation starts, stored with it in the start's
// own statement, made current around every execution of its handler (read back first when
// this process did not start it: a replay, another replica), and handed back once when the
// invocation ends here or leaves this process unfinished. Without hooks all of it is skipped.
import type { Sql } from '../../store/db';
import type { Outcome } from './runtime';
import type { FinishResult } from './invocation-store';
import { traceContextOf } from './invocation-store';
import type { ExecutionTarget, TraceHooks } from './types';

export class EngineTrace {
  constructor(
    private readonly hooks: TraceHooks | null,
    private readonly sql: Sql,
  ) {}

  /** The caller's carrier for an invocation it starts (null with tracing off). */
  capture(): string | null {
    return this.hooks ? this.hooks.capture() : null;
  }

  /** The handler's run, inside the invocation's trace context. */
  wrap(target: ExecutionTarget, run: () => Promise<unknown>): () => Promise<unknown> {
    const hooks = this.hooks;
    if (!hooks) return run;
    return async () => {
      if (target.traceContext === undefined) target.traceContext = await traceContextOf(this.sql, target.id);
      return hooks.restore(target.traceContext, run);
    };
  }

  /** An execution left this process: finished (`ok` with an outcome) or abandoned. */
  finished(target: ExecutionTarget, finish: FinishResult | null, outcome: Outcome | null): void {
    if (!this.hooks || !target.traceContext) return;
    const ended = finish?.ok === true && outcome !== null;
    this.hooks.finished(target.traceContext, ended && outcome.status !== 'completed' ? outcome.error.message : null, !ended);
  }
}
