// One invocation executing in this process. The handler runs as ordinary async code; every
// durable operation takes the next journal position. Positions the journal already holds are
// replayed (after a crash or a resume in another process); new ones are executed and written
// under the lease. The execution stays in memory between steps and while suspended ("parked"),
// so a wake-up in this process continues the same JS call stack without replaying anything.
import type { Sql } from '../../store/db';
import { isRetryableDbError } from '../../store/retryable';
import { untilAnswered } from './outage';
import { decode, encode } from './codec';
import { DurablePromise } from './durable-promise';
import {
  CancelledError,
  LeaseLostError,
  NonDeterminismError,
  TerminalError,
  fromFailure,
  toFailure,
} from './errors';
import type { ExecutionTarget } from './types';
import * as store from './invocation-store';
import * as journalStore from './journal-store';
import type { DoneEntry, JournalRow } from './invocation-store';
import type { Outcome, Runtime } from './runtime';
import type { PendingStart } from './lazy-start';
import { writeFinish, type FinishWriter } from './finish-write';

interface Waiter {
  kind: string;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export type ExecutionState = 'running' | 'suspending' | 'suspended' | 'finished' | 'detached';

/** The part of an execution that is not an operation: journal positions and replay, work in
 *  flight, writing the outcome, suspension and resumption, detaching. The operations are in
 *  execution.ts (Execution extends this). */
export abstract class ExecutionCore {
  readonly target: ExecutionTarget;
  epoch: number;
  state: ExecutionState = 'running';
  /** Set once the handler's promise settled. */
  settled = false;
  protected readonly _rt: Runtime<ExecutionCore>;
  readonly #journal: Map<number, JournalRow>;
  #nextSeq = 1;
  readonly #waiters = new Map<number, Waiter>();
  /** Awakeable positions not yet written (they are recorded at suspension, for operators). */
  protected readonly _unrecordedAwakeables = new Set<number>();
  readonly #blocked = new Map<number, number>();
  readonly #inflight = new Set<Promise<unknown>>();
  /** State operations run in call order even when not awaited (set then get reads the set). */
  protected _stateChain: Promise<unknown> = Promise.resolve();
  #fatal: Error | null = null;
  #suspendQueued = false;
  #pendingResume: { epoch: number; done: DoneEntry[] | null } | null = null;
  /** The lazy start (lazy-start.ts): `written` says whether its row exists; null when not lazy. */
  protected _lazy: PendingStart | null;

  /** A durable timer raced against `p` (execution.ts): durable promises made here need it. */
  abstract orTimeout<T>(p: DurablePromise<T>, ms: number): DurablePromise<T>;

  /** Writes a lazy start on its own, for what needs the row first (execution.ts, and a
   *  stopping worker before it hands leases back). */
  abstract ensureStarted(): Promise<void>;

  constructor(rt: Runtime<ExecutionCore>, target: ExecutionTarget, journal: JournalRow[], lazy: PendingStart | null = null) {
    this._rt = rt;
    this._lazy = lazy;
    this.target = target;
    this.epoch = target.epoch;
    this.#journal = new Map(journal.map((j) => [j.seq, j]));
  }

  get id(): string {
    return this.target.id;
  }

  get sql(): Sql {
    return this._rt.sql;
  }

  /** Runs the handler to its end (or until the lease is lost) and records the outcome. */
  async execute(run: () => Promise<unknown>, validate: (out: unknown) => unknown): Promise<void> {
    let outcome: Outcome;
    try {
      if (this.target.cancelRequested && this.#journal.size === 0) throw new CancelledError();
      const out = await run();
      await this.#drain();
      if (this.#fatal) throw this.#fatal;
      outcome = { status: 'completed', result: encode(validate(out)) };
    } catch (err) {
      await this.#drain();
      const e = this.#fatal ?? err;
      if (!(e instanceof TerminalError) && isInfraError(e)) {
        this.settled = true;
        await this.#handBack();
        this.#detach(e);
        return;
      }
      outcome = { status: e instanceof CancelledError ? 'cancelled' : 'failed', error: toFailure(e) };
    }
    this.settled = true;
    if (this.state === 'detached') return;
    let finish: store.FinishResult | null = null;
    try {
      finish = await this._durable('finish', (retry) => writeFinish(this.#writer(), outcome, retry));
    } catch (err) {
      await this.#handBack();
      this.#detach(err);
      return;
    }
    // Dropped while finishing (stop, or another process took the invocation over).
    if ((this.state as ExecutionState) === 'detached') return;
    this.state = 'finished';
    this._rt.onFinished(this, finish, finish.ok ? outcome : null);
  }

  /** Left for its lease to lapse and another try to run it from the journal: a lazy start
   *  must be written first, or nothing would be there to run (and its caller would wait). */
  async #handBack(): Promise<void> {
    if (this.unwritten) await this.ensureStarted().catch(() => {});
  }

  /** True while a lazy start is not written: there is no lease in the database to renew. */
  get unwritten(): boolean {
    return this._lazy !== null && !this._lazy.written;
  }

  /** False only while a lazy start is surely not written; an unanswered carrier may have written it. */
  get mayHoldLease(): boolean {
    return !this.unwritten || this._lazy!.uncertain;
  }

  #writer(): FinishWriter {
    return { rt: this._rt, sql: this.sql, id: this.id, epoch: this.epoch, lazy: this._lazy, rowExists: () => this._rowExists() };
  }

  /** The engine's own bookkeeping: waits out database outages, never surfaces them. */
  protected _durable<T>(operation: string, op: (retry: boolean) => Promise<T>): Promise<T> {
    if (this.unwritten) {
      // Journal entries and the finish carry a lazy start; everything else needs the row first.
      if (!CARRIES_START.has(operation)) return this.ensureStarted().then(() => this._durable(operation, op));
    }
    return untilAnswered(op, {
      abort: () => {
        if (this.state !== 'detached' && this.state !== 'finished') return null;
        this.#fatal ??= new LeaseLostError(this.id);
        return this.#fatal;
      },
      logger: this._rt.logger,
      fields: { invocationId: this.id, operation },
    });
  }

  protected async _rowExists(): Promise<boolean> {
    return (await store.getInvocationRow(this.sql, this.id)) !== undefined;
  }

  /** Marks positions as awaited; returns the release for when the awaiting settles. */
  blockOn(leaves: readonly number[]): () => void {
    for (const s of leaves) this.#blocked.set(s, (this.#blocked.get(s) ?? 0) + 1);
    this.#queueSuspend();
    return () => {
      for (const s of leaves) {
        const n = (this.#blocked.get(s) ?? 1) - 1;
        if (n <= 0) this.#blocked.delete(s);
        else this.#blocked.set(s, n);
      }
    };
  }

  // ---- positions and replay -------------------------------------------------------------

  /** The next journal position, or null when the execution is gone: the caller then hands
   *  the handler `_stalled()` instead of running anything for a lease it no longer holds. */
  protected _take(kind: string, name: string): { seq: number; entry: JournalRow | undefined } | null {
    if (this.state === 'detached' || this.state === 'finished') return null;
    if (this.#fatal) throw this.#fatal;
    const seq = this.#nextSeq++;
    const entry = this.#journal.get(seq);
    if (entry) {
      this.#journal.delete(seq);
      if (entry.kind !== kind || entry.name !== name) {
        const err = new NonDeterminismError(
          `journal position ${seq} of ${this.id} holds ${entry.kind} "${entry.name}" but the handler asked for ${kind} "${name}"`,
        );
        this.#fatal = err;
        throw err;
      }
    }
    return { seq, entry };
  }

  protected _replayed<T>(entry: JournalRow): DurablePromise<T> {
    const p = entry.failure ? Promise.reject(fromFailure(entry.failure)) : Promise.resolve(decode(entry.value) as T);
    return new DurablePromise(this, p, []);
  }

  protected _track<T>(work: () => Promise<T>): Promise<T> {
    const p = work();
    this.#inflight.add(p);
    const done = () => {
      this.#inflight.delete(p);
      this.#queueSuspend();
    };
    // Any operation that learns of a lost lease (a refused child start too) drops the whole
    // execution at once, even when the handler does not await it (a fire-and-forget send).
    p.then(done, (e: unknown) => {
      if (e instanceof LeaseLostError) this.#detach(e);
      done();
    });
    return p;
  }

  async #drain(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  /** A fenced write found another lease epoch: someone else owns the invocation now. */
  protected _lost(): never {
    const err = new LeaseLostError(this.id);
    // Already dropped (taken over, or the engine stopping and handing leases back): expected.
    const level = this.state === 'detached' ? 'debug' : 'info';
    this._rt.logger[level]({ invocationId: this.id, epoch: this.epoch }, 'engine write refused: the lease is no longer held');
    this.#detach(err);
    throw err;
  }

  /** Once the lease is lost nothing the handler awaits settles: it stops where it is (and is
   *  garbage collected) instead of running its catch and finally blocks, which would act (a
   *  deploy's catch-all stops topologies) for an invocation another owner continues. (A lost
   *  lease detaches the execution in `_track` before the rejection gets here.) */
  handOut<T>(p: Promise<T>): Promise<T> {
    return p.then(
      (v) => (this.state === 'detached' ? stalled<T>() : v),
      (e: unknown) => (this.state === 'detached' ? stalled<T>() : Promise.reject(e)),
    );
  }

  protected _stalled<T>(): DurablePromise<T> {
    return new DurablePromise(this, stalled<T>(), []);
  }

  /** A pending completion at `seq`; settles when the entry completes (here or elsewhere). */
  protected _waitFor<T>(seq: number, kind: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiters.set(seq, { kind, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  // ---- suspension and resumption ------------------------------------------------------------

  #queueSuspend(): void {
    // Nothing awaited on a journal position (a handler between ctx.run steps): nothing to park
    // on, so no check. The blockOn that awaits one queues its own.
    if (this.#suspendQueued || this.state !== 'running' || this.#blocked.size === 0) return;
    this.#suspendQueued = true;
    // After the handler's continuations ran: if they started new work, there is no suspension.
    setImmediate(() => {
      this.#suspendQueued = false;
      void this.#trySuspend();
    });
  }

  async #trySuspend(): Promise<void> {
    if (this.state !== 'running' || this.settled || this.#inflight.size > 0) return;
    const awaited = [...this.#blocked.keys()].filter((s) => this.#waiters.has(s));
    if (awaited.length === 0) return;
    const awakeables = [...this._unrecordedAwakeables];
    this.state = 'suspending';
    let res: store.SuspendResult;
    try {
      res = await this._durable('suspend', (retry) => this.#suspend(awaited, awakeables, retry));
    } catch (err) {
      this.#detach(err);
      return;
    }
    // Dropped meanwhile (another process took the invocation over, or the engine stopped).
    if (this.state !== 'suspending') return;
    if (res.cancelChildren?.length) this._rt.cancelChildren(res.cancelChildren);
    if (!res.ok) {
      this.#detach(new LeaseLostError(this.id));
      return;
    }
    for (const s of awakeables) this._unrecordedAwakeables.delete(s);
    if (!res.suspended) {
      this.state = 'running';
      for (const d of res.done ?? []) this._deliver(d);
      this.#queueSuspend();
      return;
    }
    this.state = 'suspended';
    this._rt.onSuspended(this, res.dueAt ?? null);
    const pending = this.#pendingResume;
    if (pending) {
      this.#pendingResume = null;
      void this.resume(pending.epoch, pending.done);
    }
  }

  async #suspend(awaited: number[], awakeables: number[], retry: boolean): Promise<store.SuspendResult> {
    const r = await store.suspendInvocation(this.sql, this.id, this.epoch, awaited, awakeables, toFailure(new CancelledError()));
    if (r.ok || !retry) return r;
    // The first try may have parked it already (and a wake-up may have followed).
    const row = await store.getInvocationRow(this.sql, this.id);
    if (row && row.leaseEpoch === this.epoch && row.parkedBy === this._rt.workerId && (row.status === 'suspended' || row.status === 'ready')) {
      return { ok: true, suspended: true, dueAt: row.status === 'suspended' && row.dueAt ? new Date(row.dueAt).getTime() : null };
    }
    return r;
  }

  /** True when a claim with this epoch continues this parked execution (nobody ran it since). */
  canResume(epoch: number): boolean {
    return (this.state === 'suspended' || this.state === 'suspending') && epoch === this.epoch + 1;
  }

  /** Continues a parked execution under a new lease, delivering what completed meanwhile. */
  async resume(epoch: number, done: DoneEntry[] | null): Promise<void> {
    if (this.state === 'suspending') {
      this.#pendingResume = { epoch, done };
      return;
    }
    if (this.state !== 'suspended') return;
    this.epoch = epoch;
    this.state = 'running';
    this._rt.onResumed(this);
    let entries = done;
    if (!entries) {
      try {
        entries = await this._durable('resume', () => journalStore.doneEntries(this.sql, this.id));
      } catch (err) {
        this.#detach(err);
        return;
      }
    }
    for (const d of entries) this._deliver(d);
    this.#queueSuspend();
  }

  protected _deliver(d: DoneEntry): void {
    const w = this.#waiters.get(d.seq);
    if (!w) return;
    this.#waiters.delete(d.seq);
    if (d.failure) w.reject(fromFailure(d.failure));
    else w.resolve(decode(d.value));
  }

  /** Abandons this in-memory execution: another owner (or a later claim) continues from the
   *  journal. Operations still in flight fail their fenced writes. */
  detach(reason: unknown): void {
    this.#detach(reason);
  }

  #detach(reason: unknown): void {
    if (this.state === 'detached' || this.state === 'finished') return;
    // Counted here, however it was learnt (a refused write, a renewal, a takeover notice, a
    // re-claim): each path drops the execution, so a loss is counted once. A parked copy held
    // no lease to lose.
    if (reason instanceof LeaseLostError && (this.state === 'running' || this.state === 'suspending')) this._rt.onLeaseLost();
    this.state = 'detached';
    // Dropped before its row was written (a stop): nothing may create it now (withStart).
    if (this.unwritten) this._lazy!.dropped = true;
    this.#fatal ??= reason instanceof Error ? reason : new LeaseLostError(this.id);
    // Awaits stay unsettled for good: the handler just stops here (and is garbage collected)
    // instead of running its finally blocks for an invocation someone else continues.
    this.#waiters.clear();
    if (!(reason instanceof LeaseLostError)) {
      this._rt.logger.warn({ invocationId: this.id, err: (reason as Error)?.message ?? String(reason) }, 'engine execution abandoned');
    }
    this._rt.onFinished(this, null, null);
  }
}

/** Operations whose statement writes a lazy start itself (lazy-start.ts). */
const CARRIES_START: ReadonlySet<string> = new Set(['journal', 'finish', 'start']);

function stalled<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

/** Errors from the database or network (not the handler's own failures): the invocation is
 *  not failed for them; its lease lapses and it is retried from the journal. */
function isInfraError(e: unknown): boolean {
  return e instanceof LeaseLostError || isRetryableDbError(e);
}
