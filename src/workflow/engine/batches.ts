// The engine's group commits (group-commit.ts), one set per process: completed steps, starts
// and finishes of every execution here share statements.
import type { Sql } from '../../store/db';
import { finishMany, journalDoneMany, startMany, type DoneWrite, type FinishArgs } from './batch-store';
import { GroupCommit } from './group-commit';
import type { FinishResult, StartArgs, StartResult } from './invocation-store';

/** Each start with an exception block is a subtransaction; PostgreSQL caches 64 per session
 *  before every other session's snapshots slow down (subxid overflow), so a batch stays well
 *  under that. */
const MAX_STARTS_PER_STATEMENT = 32;

export class EngineBatches {
  readonly journal: GroupCommit<DoneWrite, boolean>;
  readonly starts: GroupCommit<StartArgs, StartResult>;
  readonly finishes: GroupCommit<FinishArgs, FinishResult>;

  constructor(sql: Sql) {
    this.journal = new GroupCommit((entries: readonly DoneWrite[]) => journalDoneMany(sql, entries));
    this.starts = new GroupCommit((starts: readonly StartArgs[]) => startMany(sql, starts), { maxBatch: MAX_STARTS_PER_STATEMENT });
    this.finishes = new GroupCommit((finishes: readonly FinishArgs[]) => finishMany(sql, finishes));
  }

  /** Statements sent and requests they carried, per kind (the benchmark's counts). */
  counts(): Record<'journal' | 'starts' | 'finishes', { statements: number; members: number }> {
    const c = (g: { statements: number; members: number }) => ({ statements: g.statements, members: g.members });
    return { journal: c(this.journal), starts: c(this.starts), finishes: c(this.finishes) };
  }
}
