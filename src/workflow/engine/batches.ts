// The engine's group commits (group-commit.ts), one set per process: completed steps, starts
// and finishes of every execution here share statements. A statement with one member (a lone
// invocation's every request) is the single-row form instead (journal-store.ts,
// invocation-store.ts): the same function or fence, without the document, the recordset, the
// join and aggregate, or finishMany's key-lock sub-query, which only order many members.
import type { Sql } from '../../store/db';
import { finishMany, journalDoneMany, startAndFinish, startAndJournal, startMany, type DoneWrite, type FinishArgs } from './batch-store';
import { GroupCommit } from './group-commit';
import { finishInvocation, startInvocation, type FinishResult, type StartArgs, type StartResult } from './invocation-store';
import { journalDone } from './journal-store';
import { ownStart, type PendingStart } from './lazy-start';
import { LeaseLostError } from './errors';

/** Each start with an idempotency key is a subtransaction (its exception block); PostgreSQL
 *  caches 64 per session before every other session's snapshots slow down (subxid overflow),
 *  so a batch stays well under that. */
const MAX_STARTS_PER_STATEMENT = 32;

export class EngineBatches {
  readonly journal: GroupCommit<DoneWrite, boolean>;
  readonly starts: GroupCommit<StartArgs, StartResult>;
  readonly finishes: GroupCommit<FinishArgs, FinishResult>;

  constructor(sql: Sql) {
    this.journal = new GroupCommit(
      carrying(
        sql,
        (many) => journalDoneMany(sql, many),
        (e) => journalDone(sql, e.invocationId, e.epoch, e.seq, e.kind, e.name, e.value, e.failure),
        (e, start) => startAndJournal(sql, start.args, e),
      ),
    );
    this.starts = new GroupCommit(
      async (starts: readonly StartArgs[]) => (starts.length > 1 ? startMany(sql, starts) : [await startInvocation(sql, starts[0]!)]),
      { maxBatch: MAX_STARTS_PER_STATEMENT },
    );
    this.finishes = new GroupCommit(
      carrying(
        sql,
        (many) => finishMany(sql, many),
        (f) => finishInvocation(sql, f.id, f.epoch, f.status, f.result, f.error, f.worker, f.leaseMs),
        (f, start) => startAndFinish(sql, start.args, f),
      ),
    );
  }

  /** Statements sent and requests they carried, per kind (the benchmark's counts). */
  counts(): Record<'journal' | 'starts' | 'finishes', { statements: number; members: number }> {
    const c = (g: { statements: number; members: number }) => ({ statements: g.statements, members: g.members });
    return { journal: c(this.journal), starts: c(this.starts), finishes: c(this.finishes) };
  }
}

/** A group commit's send for members that may carry a lazy start (journal writes, finishes):
 *  many go as one statement after their starts (startCarried); a lone one carrying an unwritten
 *  start writes it in its own statement (one round trip), else it goes as the plain single row. */
function carrying<M extends { start?: PendingStart | null }, R>(
  sql: Sql,
  many: (members: readonly M[]) => Promise<R[]>,
  alone: (member: M) => Promise<R>,
  aloneWithStart: (member: M, start: PendingStart) => Promise<R>,
): (members: readonly M[]) => Promise<R[]> {
  return async (members) => {
    if (members.length > 1) {
      await startCarried(sql, members);
      return many(members);
    }
    const m = members[0]!;
    if (m.start && !m.start.written) {
      const r = await aloneWithStart(m, m.start);
      m.start.written = true;
      return [r];
    }
    return [await alone(m)];
  };
}

/** Many members, some carrying lazy starts: those starts go first, in a statement of their
 *  own, and are marked written once it committed, so the members' statement can fence on their
 *  rows, and a member sent again alone (its batch failed) does not start twice. */
async function startCarried(sql: Sql, members: readonly { start?: PendingStart | null }[]): Promise<void> {
  const carried = members.flatMap((m) => (m.start && !m.start.written ? [m.start] : []));
  if (carried.length === 0) return;
  for (let i = 0; i < carried.length; i += MAX_STARTS_PER_STATEMENT) {
    const chunk = carried.slice(i, i + MAX_STARTS_PER_STATEMENT);
    const answers = await startMany(sql, chunk.map((s) => s.args));
    // Every answer is checked before one throws (lazy-start.ts, startAnswered: it cannot), so
    // the starts written stay marked written.
    chunk.forEach((s, k) => {
      if (ownStart(answers[k])) s.written = true;
    });
    const refused = chunk.find((s) => !s.written);
    if (refused) throw new LeaseLostError(refused.args.id);
  }
}
