// What an execution needs from its engine (worker.ts implements it), and the outcome it records.
import type { Logger } from '../../log';
import type { Sql } from '../../store/db';
import type { StoredFailure } from './errors';
import type { ChildOptions, ChildTarget } from './types';
import type * as store from './invocation-store';
import type { EngineBatches } from './batches';
import type { EngineMetrics } from './metrics';

/** What an execution needs from its engine; E is the execution (execution-core.ts), a
 *  parameter so this file imports none of it. */
export interface Runtime<E> {
  readonly sql: Sql;
  readonly logger: Logger;
  readonly workerId: string;
  readonly leaseMs: number;
  /** Completed steps, starts and finishes of every execution here, sent together. */
  readonly batches: EngineBatches;
  /** Worker id to claim a child for in process, or null when at capacity / not running. */
  claimWorker(): string | null;
  /** `retry`: an earlier try's answer was lost, so the start may already have committed. */
  startChild(exec: E, seq: number, entry: 'call' | 'send', target: ChildTarget, opts: ChildOptions, retry: boolean): Promise<store.StartResult>;
  /** Cancels the invocations of calls that a delivered cancellation failed. */
  cancelChildren(ids: string[]): void;
  resolveAwakeable(id: string, value: unknown): Promise<boolean>;
  rejectAwakeable(id: string, reason: string): Promise<boolean>;
  onSuspended(exec: E, dueAt: number | null): void;
  onResumed(exec: E): void;
  onFinished(exec: E, finish: store.FinishResult | null, outcome: Outcome | null): void;
  /** An execution that held the lease learnt it had lost it (for engine_leases_lost_total). */
  onLeaseLost(): void;
  /** The engine's metrics (a step's retries count in engine_step_retries_total). */
  readonly metrics: Pick<EngineMetrics, 'stepRetried'>;
}

export type Outcome = { status: 'completed'; result: string } | { status: 'failed' | 'cancelled'; error: StoredFailure };
