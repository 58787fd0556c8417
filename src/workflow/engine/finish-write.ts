// Writing an execution's outcome: one finish statement (carrying a lazy start when the handler
// returned before any durable write), and recognising a finish of its own whose answer was lost.
import type { Sql } from '../../store/db';
import * as store from './invocation-store';
import { withStart, type PendingStart } from './lazy-start';
import type { Outcome, Runtime } from './runtime';

export interface FinishWriter {
  readonly rt: Runtime<unknown>;
  readonly sql: Sql;
  readonly id: string;
  readonly epoch: number;
  readonly lazy: PendingStart | null;
  rowExists(): Promise<boolean>;
}

export async function writeFinish(w: FinishWriter, outcome: Outcome, retry: boolean): Promise<store.FinishResult> {
  const r = await withStart(w.lazy, retry, () => w.rowExists(), (start) => w.rt.batches.finishes.submit({
    start,
    id: w.id,
    epoch: w.epoch,
    status: outcome.status,
    result: outcome.status === 'completed' ? outcome.result : null,
    error: outcome.status === 'completed' ? null : outcome.error,
    worker: w.rt.claimWorker(),
    leaseMs: w.rt.leaseMs,
  }));
  if (r.ok || !(retry || w.lazy?.uncertain)) return r;
  // The first try (or a statement that carried the start with it) may have committed: only this
  // lease epoch can have finished it. What it handed on (the parent, the key's next invocation)
  // is found by claims once those leases lapse.
  const row = await store.getInvocationRow(w.sql, w.id);
  return row && row.leaseEpoch === w.epoch && store.TERMINAL_STATUSES.includes(row.status) ? { ok: true } : r;
}
