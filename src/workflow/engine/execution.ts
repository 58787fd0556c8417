// One invocation executing in this process. The handler runs as ordinary async code; every
// durable operation takes the next journal position. Positions the journal already holds are
// replayed (after a crash or a resume in another process); new ones are executed and written
// under the lease. The execution stays in memory between steps and while suspended ("parked"),
// so a wake-up in this process continues the same JS call stack without replaying anything.
import { setTimeout as delay } from 'node:timers/promises';
import pRetry, { AbortError } from 'p-retry';
import type { Logger } from '../../log';
import type { Sql, TxSql } from '../../store/db';
import { isRetryableDbError } from '../../store/retryable';
import { backoffMs, fromPostgres, untilAnswered } from './outage';
import { decode, encode } from './codec';
import { DurablePromise } from './durable-promise';
import {
  CancelledError,
  LeaseLostError,
  NonDeterminismError,
  TerminalError,
  TimeoutError,
  fromFailure,
  toFailure,
  type StoredFailure,
} from './errors';
import type { ChildOptions, ChildTarget, ExecutionTarget, RunOptions } from './types';
import * as store from './invocation-store';
import type { DoneEntry, JournalRow } from './invocation-store';

/** Default attempts of a step: enough to ride out a restart of a dependency, bounded so a
 *  broken step fails visibly instead of retrying forever. */
const DEFAULT_MAX_ATTEMPTS = 10;
/** Default first retry delay: short enough for fast tests, long enough not to hammer. */
const DEFAULT_INITIAL_DELAY_MS = 100;
/** Default retry delay cap: keeps a retrying step responsive to a recovered dependency. */
const DEFAULT_MAX_DELAY_MS = 10_000;

/** What an execution needs from its engine. */
export interface Runtime {
  readonly sql: Sql;
  readonly logger: Logger;
  readonly workerId: string;
  readonly leaseMs: number;
  /** Worker id to claim a child for in process, or null when at capacity / not running. */
  claimWorker(): string | null;
  /** `retry`: an earlier try's answer was lost, so the start may already have committed. */
  startChild(exec: Execution, seq: number, entry: 'call' | 'send', target: ChildTarget, opts: ChildOptions, retry: boolean): Promise<store.StartResult>;
  /** Cancels the invocations of calls that a delivered cancellation failed. */
  cancelChildren(ids: string[]): void;
  resolveAwakeable(id: string, value: unknown): Promise<boolean>;
  rejectAwakeable(id: string, reason: string): Promise<boolean>;
  onSuspended(exec: Execution, dueAt: number | null): void;
  onResumed(exec: Execution): void;
  onFinished(exec: Execution, finish: store.FinishResult | null, outcome: Outcome | null): void;
}

export type Outcome = { status: 'completed'; result: string } | { status: 'failed' | 'cancelled'; error: StoredFailure };

interface Waiter {
  kind: string;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export type ExecutionState = 'running' | 'suspending' | 'suspended' | 'finished' | 'detached';

export function awakeableId(invocationId: string, seq: number): string {
  return `awk-${invocationId.slice(4)}-${seq}`;
}

/** awk-<the invocation id's random part>-<journal position>: resolvable with no lookup table. */
const AWAKEABLE_ID = /^awk-([a-z2-7]{16})-(\d{1,9})$/;

export function parseAwakeableId(id: string): { invocationId: string; seq: number } | null {
  const m = AWAKEABLE_ID.exec(id);
  return m ? { invocationId: `inv-${m[1]}`, seq: Number(m[2]) } : null;
}

export class Execution {
  readonly target: ExecutionTarget;
  epoch: number;
  state: ExecutionState = 'running';
  /** Set once the handler's promise settled. */
  settled = false;
  readonly #rt: Runtime;
  readonly #journal: Map<number, JournalRow>;
  #nextSeq = 1;
  readonly #waiters = new Map<number, Waiter>();
  /** Awakeable positions not yet written (they are recorded at suspension, for operators). */
  readonly #unrecordedAwakeables = new Set<number>();
  readonly #blocked = new Map<number, number>();
  readonly #inflight = new Set<Promise<unknown>>();
  /** State operations run in call order even when not awaited (set then get reads the set). */
  #stateChain: Promise<unknown> = Promise.resolve();
  #fatal: Error | null = null;
  #suspendQueued = false;
  #pendingResume: { epoch: number; done: DoneEntry[] | null } | null = null;

  constructor(rt: Runtime, target: ExecutionTarget, journal: JournalRow[]) {
    this.#rt = rt;
    this.target = target;
    this.epoch = target.epoch;
    this.#journal = new Map(journal.map((j) => [j.seq, j]));
  }

  get id(): string {
    return this.target.id;
  }

  get sql(): Sql {
    return this.#rt.sql;
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
        this.#detach(e);
        return;
      }
      outcome = { status: e instanceof CancelledError ? 'cancelled' : 'failed', error: toFailure(e) };
    }
    this.settled = true;
    if (this.state === 'detached') return;
    let finish: store.FinishResult | null = null;
    try {
      finish = await this.#durable('finish', (retry) => this.#finish(outcome, retry));
    } catch (err) {
      this.#detach(err);
      return;
    }
    // Dropped while finishing (stop, or another process took the invocation over).
    if ((this.state as ExecutionState) === 'detached') return;
    this.state = 'finished';
    this.#rt.onFinished(this, finish, finish.ok ? outcome : null);
  }

  async #finish(outcome: Outcome, retry: boolean): Promise<store.FinishResult> {
    const r = await store.finishInvocation(
      this.sql,
      this.id,
      this.epoch,
      outcome.status,
      outcome.status === 'completed' ? outcome.result : null,
      outcome.status === 'completed' ? null : outcome.error,
      this.#rt.claimWorker(),
      this.#rt.leaseMs,
    );
    if (r.ok || !retry) return r;
    // The first try may have committed: only this lease epoch can have finished it. What it
    // handed on (the parent, the key's next invocation) is found by claims once those leases lapse.
    const row = await store.getInvocationRow(this.sql, this.id);
    return row && row.leaseEpoch === this.epoch && store.TERMINAL_STATUSES.includes(row.status) ? { ok: true } : r;
  }

  /** The engine's own bookkeeping: waits out database outages, never surfaces them. */
  #durable<T>(operation: string, op: (retry: boolean) => Promise<T>): Promise<T> {
    return untilAnswered(op, {
      abort: () => {
        if (this.state !== 'detached' && this.state !== 'finished') return null;
        this.#fatal ??= new LeaseLostError(this.id);
        return this.#fatal;
      },
      logger: this.#rt.logger,
      fields: { invocationId: this.id, operation },
    });
  }

  /** A journal write of a completed position; a retry recognises its own earlier write. */
  async #journalDone(seq: number, kind: string, name: string, value: string | null, failure: StoredFailure | null, retry: boolean): Promise<boolean> {
    if (await store.journalDone(this.sql, this.id, this.epoch, seq, kind, name, value, failure)) return true;
    return retry && (await store.ownEntry(this.sql, this.id, this.epoch, seq, kind, name)) !== null;
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

  #take(kind: string, name: string): { seq: number; entry: JournalRow | undefined } {
    if (this.#fatal) throw this.#fatal;
    if (this.state === 'detached' || this.state === 'finished') throw new LeaseLostError(this.id);
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

  #replayed<T>(entry: JournalRow): DurablePromise<T> {
    const p = entry.failure ? Promise.reject(fromFailure(entry.failure)) : Promise.resolve(decode(entry.value) as T);
    return new DurablePromise(this, p, []);
  }

  #track<T>(work: () => Promise<T>): Promise<T> {
    const p = work();
    this.#inflight.add(p);
    const done = () => {
      this.#inflight.delete(p);
      this.#queueSuspend();
    };
    p.then(done, done);
    return p;
  }

  async #drain(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  #lost(): never {
    const err = new LeaseLostError(this.id);
    this.#fatal ??= err;
    throw err;
  }

  /** A pending completion at `seq`; settles when the entry completes (here or elsewhere). */
  #waitFor<T>(seq: number, kind: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiters.set(seq, { kind, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  // ---- operations (used by Context) ---------------------------------------------------------

  run<T>(name: string, fn: (attempt: number) => Promise<T> | T, opts: RunOptions = {}): DurablePromise<T> {
    const { seq, entry } = this.#take('run', name);
    if (entry) return this.#replayed<T>(entry);
    const p = this.#track(async () => {
      const { value, failure } = await this.#attempt(name, opts, async (attempt) => encode(await fn(attempt)));
      if (!(await this.#durable('journal', (retry) => this.#journalDone(seq, 'run', name, value, failure, retry)))) this.#lost();
      if (failure) throw fromFailure(failure);
      return decode(JSON.parse(value!)) as T;
    });
    return new DurablePromise(this, p, []);
  }

  runTx<T>(name: string, fn: (tx: TxSql) => Promise<T>, opts: RunOptions = {}): DurablePromise<T> {
    const { seq, entry } = this.#take('run', name);
    if (entry) return this.#replayed<T>(entry);
    let tries = 0;
    const p = this.#track(async () => {
      const { value, failure } = await this.#attempt(name, opts, async () =>
        this.sql.begin(async (tx) => {
          if (!(await store.fenceInTx(tx, this.id, this.epoch))) throw new AbortError(new LeaseLostError(this.id));
          if (tries++ > 0) {
            // An earlier try may have committed without our hearing of it (the connection
            // died during COMMIT): then its entry is here, and fn must not run again.
            const done = await store.ownEntry(tx, this.id, this.epoch, seq, 'run', name);
            if (done) return JSON.stringify(done.value);
          }
          const encoded = encode(await fn(tx));
          if (!(await store.journalDone(tx, this.id, this.epoch, seq, 'run', name, encoded, null))) {
            throw new AbortError(new LeaseLostError(this.id));
          }
          return encoded;
        }) as Promise<string>,
      );
      if (failure) {
        if (!(await this.#durable('journal', (retry) => this.#journalDone(seq, 'run', name, null, failure, retry)))) this.#lost();
        throw fromFailure(failure);
      }
      return decode(JSON.parse(value!)) as T;
    });
    return new DurablePromise(this, p, []);
  }

  async #attempt(
    name: string,
    opts: RunOptions,
    fn: (attempt: number) => Promise<string>,
  ): Promise<{ value: string | null; failure: StoredFailure | null }> {
    const maxAttempts = Math.max(1, opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
    let made = 0;
    try {
      const value = await pRetry(
        async (attempt) => {
          made = attempt;
          for (let outages = 0; ; outages++) {
            try {
              return await fn(attempt);
            } catch (err) {
              if (err instanceof AbortError) throw err;
              // TerminalError ends the step at once; a lost lease ends the whole execution.
              if (err instanceof TerminalError || err instanceof LeaseLostError) throw new AbortError(err);
              // The database went away under the step: not the step's failure, and no attempt.
              if (await this.#isOutage(err)) {
                await this.#waitOut(name, outages, err);
                continue;
              }
              throw err instanceof Error ? err : new Error(String(err));
            }
          }
        },
        {
          retries: maxAttempts - 1,
          minTimeout: opts.initialDelayMs ?? DEFAULT_INITIAL_DELAY_MS,
          maxTimeout: opts.maxDelayMs ?? DEFAULT_MAX_DELAY_MS,
          factor: opts.factor ?? 2,
          onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
            this.#rt.logger.warn({ invocationId: this.id, step: name, attemptNumber, retriesLeft, err: error.message }, 'engine step attempt failed');
          },
        },
      );
      return { value, failure: null };
    } catch (err) {
      const e = err instanceof AbortError ? err.originalError : err;
      if (e instanceof LeaseLostError) this.#lost();
      if (e instanceof TerminalError) return { value: null, failure: toFailure(e) };
      // p-retry gives up early on programming errors (TypeError), so count what really ran.
      const message = `step "${name}" failed after ${made} attempt(s): ${(e as Error).message ?? String(e)}`;
      return { value: null, failure: { name: 'TerminalError', message, code: 'ERR_ENGINE_STEP_FAILED' } };
    }
  }

  /** A retryable database error (the table) that came from PostgreSQL, or any retryable one
   *  while the engine's database does not answer. A refused connection to some other service
   *  while the database is fine is the step's own failure. */
  async #isOutage(err: unknown): Promise<boolean> {
    if (!isRetryableDbError(err)) return false;
    return fromPostgres(err) || !(await this.#databaseAnswers());
  }

  async #databaseAnswers(): Promise<boolean> {
    try {
      await this.sql`SELECT 1`;
      return true;
    } catch {
      return false;
    }
  }

  /** Waits (backoff, no limit) until the database answers; aborts if the execution is gone. */
  async #waitOut(step: string, outages: number, err: unknown): Promise<void> {
    if (outages === 0) this.#rt.logger.warn({ invocationId: this.id, step, err: (err as Error).message }, 'engine step waiting for the database');
    for (let n = outages; ; n++) {
      await delay(backoffMs(n));
      if (this.state === 'detached' || this.state === 'finished') throw new AbortError(new LeaseLostError(this.id));
      if (await this.#databaseAnswers()) return;
    }
  }

  sleep(name: string, ms: number): DurablePromise<void> {
    const { seq, entry } = this.#take('sleep', name);
    if (entry?.status === 'done') return this.#replayed<void>(entry);
    const wait = this.#waitFor<void>(seq, 'sleep');
    if (entry) return new DurablePromise(this, wait, [seq]);
    const written = this.#track(async () => {
      const ok = await this.#durable('journal', async (retry) => {
        if (await store.journalSleep(this.sql, this.id, this.epoch, seq, name, Math.max(0, ms))) return true;
        return retry && (await store.ownEntry(this.sql, this.id, this.epoch, seq, 'sleep', name)) !== null;
      });
      if (!ok) this.#lost();
    });
    return new DurablePromise(this, written.then(() => wait), [seq]);
  }

  awakeable<T>(): { id: string; promise: DurablePromise<T> } {
    const { seq, entry } = this.#take('awakeable', 'awakeable');
    const id = awakeableId(this.id, seq);
    if (entry?.status === 'done') return { id, promise: this.#replayed<T>(entry) };
    if (!entry) this.#unrecordedAwakeables.add(seq);
    return { id, promise: new DurablePromise(this, this.#waitFor<T>(seq, 'awakeable'), [seq]) };
  }

  call<T>(target: ChildTarget, opts: ChildOptions): DurablePromise<T> {
    const name = `${target.service}/${target.handler}`;
    const { seq, entry } = this.#take('call', name);
    if (entry?.status === 'done') return this.#replayed<T>(entry);
    const wait = this.#waitFor<T>(seq, 'call');
    if (entry) return new DurablePromise(this, wait, [seq]);
    const started = this.#track(async () => {
      const r = await this.#durable('call', (retry) => this.#rt.startChild(this, seq, 'call', target, opts, retry));
      if (r.deduped && r.status !== undefined && store.TERMINAL_STATUSES.includes(r.status)) {
        this.#deliver({ seq, value: r.result ?? null, failure: r.error ?? null });
      }
    });
    return new DurablePromise(this, started.then(() => wait), [seq]);
  }

  send(target: ChildTarget, opts: ChildOptions): DurablePromise<string> {
    const name = `${target.service}/${target.handler}`;
    const { seq, entry } = this.#take('send', name);
    if (entry) return this.#replayed<string>(entry);
    const p = this.#track(async () => (await this.#durable('send', (retry) => this.#rt.startChild(this, seq, 'send', target, opts, retry))).id);
    return new DurablePromise(this, p, []);
  }

  stateGet<T>(name: string): DurablePromise<T | undefined> {
    const { seq, entry } = this.#take('get', name);
    if (entry) return this.#replayed<T | undefined>(entry);
    const prev = this.#stateChain;
    const p = this.#track(async () => {
      await prev.catch(() => {});
      const key = this.#key();
      const r = await this.#durable('state', async (retry) => {
        const got = await store.journalStateGet(this.sql, this.id, this.epoch, seq, this.target.service, key, name);
        if (got.ok || !retry) return got;
        const own = await store.ownEntry(this.sql, this.id, this.epoch, seq, 'get', name);
        return own ? { ok: true, value: own.value } : got;
      });
      if (!r.ok) this.#lost();
      return decode(r.value) as T | undefined;
    });
    this.#stateChain = p;
    return new DurablePromise(this, p, []);
  }

  stateWrite(name: string, value: unknown): DurablePromise<void> {
    if (this.target.kind !== 'exclusive') {
      throw new TerminalError(`state of ${this.target.service} can only be written by exclusive handlers`, { code: 'ERR_ENGINE_STATE_READONLY' });
    }
    const { seq, entry } = this.#take(value === undefined ? 'clear' : 'set', name);
    if (entry) return this.#replayed<void>(entry);
    const encoded = value === undefined ? null : JSON.stringify(value);
    const prev = this.#stateChain;
    const p = this.#track(async () => {
      await prev.catch(() => {});
      const key = this.#key();
      const kind = value === undefined ? 'clear' : 'set';
      const ok = await this.#durable('state', async (retry) => {
        if (await store.journalStateWrite(this.sql, this.id, this.epoch, seq, this.target.service, key, name, encoded)) return true;
        return retry && (await store.ownEntry(this.sql, this.id, this.epoch, seq, kind, name)) !== null;
      });
      if (!ok) this.#lost();
    });
    this.#stateChain = p;
    return new DurablePromise(this, p, []);
  }

  #key(): string {
    if (this.target.key === null) {
      throw new TerminalError(`service ${this.target.service} has no state; use a virtual object`, { code: 'ERR_ENGINE_NO_STATE' });
    }
    return this.target.key;
  }

  all<T extends readonly unknown[]>(ps: { [K in keyof T]: DurablePromise<T[K]> | Promise<T[K]> }): DurablePromise<T> {
    const parts = ps as readonly (DurablePromise<unknown> | Promise<unknown>)[];
    const inner = Promise.all(parts.map(innerOf)) as Promise<unknown> as Promise<T>;
    return new DurablePromise(this, inner, parts.flatMap(leavesOf));
  }

  /** Waits for every part, failed or not (collect a wave of fan-out calls). */
  allSettled<T>(ps: readonly (DurablePromise<T> | Promise<T>)[]): DurablePromise<PromiseSettledResult<T>[]> {
    return new DurablePromise(this, Promise.allSettled(ps.map(innerOf)), ps.flatMap(leavesOf));
  }

  /** First to settle wins; the winner is journaled so a replay picks the same one. */
  race<T>(ps: readonly (DurablePromise<T> | Promise<T>)[]): DurablePromise<T> {
    const r = this.#raceIndexed(ps);
    return new DurablePromise(this, r.then((w) => (w.ok ? (w.value as T) : Promise.reject(w.error))), ps.flatMap(leavesOf));
  }

  orTimeout<T>(p: DurablePromise<T>, ms: number): DurablePromise<T> {
    const timer = this.sleep('timeout', ms);
    const r = this.#raceIndexed<unknown>([p, timer]);
    const inner = r.then((w) => {
      // Only a timer that fired is a timeout; one failed by a cancellation is the cancellation.
      if (w.index === 1 && w.ok) throw new TimeoutError(`timed out after ${ms} ms`);
      return w.ok ? (w.value as T) : Promise.reject(w.error);
    });
    return new DurablePromise(this, inner, [...p.leaves, ...timer.leaves]);
  }

  #raceIndexed<T>(ps: readonly (DurablePromise<T> | Promise<T>)[]): Promise<{ index: number; ok: boolean; value?: T; error?: unknown }> {
    const { seq, entry } = this.#take('race', 'race');
    const settle = (i: number) =>
      innerOf(ps[i]!).then(
        (value) => ({ index: i, ok: true, value }),
        (error: unknown) => ({ index: i, ok: false, error }),
      );
    if (entry) return settle(decode(entry.value) as number);
    return Promise.race(ps.map((_, i) => settle(i))).then((w) =>
      this.#track(async () => {
        if (!(await this.#durable('journal', (retry) => this.#journalDone(seq, 'race', 'race', encode(w.index), null, retry)))) this.#lost();
        return w;
      }),
    );
  }

  resolveAwakeable(id: string, value: unknown): DurablePromise<boolean> {
    return this.run(`resolve ${id}`, () => this.#rt.resolveAwakeable(id, value));
  }

  rejectAwakeable(id: string, reason: string): DurablePromise<boolean> {
    return this.run(`reject ${id}`, () => this.#rt.rejectAwakeable(id, reason));
  }

  // ---- suspension and resumption ------------------------------------------------------------

  #queueSuspend(): void {
    if (this.#suspendQueued || this.state !== 'running') return;
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
    const awakeables = [...this.#unrecordedAwakeables];
    this.state = 'suspending';
    let res: store.SuspendResult;
    try {
      res = await this.#durable('suspend', (retry) => this.#suspend(awaited, awakeables, retry));
    } catch (err) {
      this.#detach(err);
      return;
    }
    // Dropped meanwhile (another process took the invocation over, or the engine stopped).
    if (this.state !== 'suspending') return;
    if (res.cancelChildren?.length) this.#rt.cancelChildren(res.cancelChildren);
    if (!res.ok) {
      this.#detach(new LeaseLostError(this.id));
      return;
    }
    for (const s of awakeables) this.#unrecordedAwakeables.delete(s);
    if (!res.suspended) {
      this.state = 'running';
      for (const d of res.done ?? []) this.#deliver(d);
      this.#queueSuspend();
      return;
    }
    this.state = 'suspended';
    this.#rt.onSuspended(this, res.dueAt ?? null);
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
    if (row && row.leaseEpoch === this.epoch && row.parkedBy === this.#rt.workerId && (row.status === 'suspended' || row.status === 'ready')) {
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
    this.#rt.onResumed(this);
    let entries = done;
    if (!entries) {
      try {
        entries = await this.#durable('resume', () => store.doneEntries(this.sql, this.id));
      } catch (err) {
        this.#detach(err);
        return;
      }
    }
    for (const d of entries) this.#deliver(d);
    this.#queueSuspend();
  }

  #deliver(d: DoneEntry): void {
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
    this.state = 'detached';
    this.#fatal ??= reason instanceof Error ? reason : new LeaseLostError(this.id);
    // Awaits stay unsettled for good: the handler just stops here (and is garbage collected)
    // instead of running its finally blocks for an invocation someone else continues.
    this.#waiters.clear();
    if (!(reason instanceof LeaseLostError)) {
      this.#rt.logger.warn({ invocationId: this.id, err: (reason as Error)?.message ?? String(reason) }, 'engine execution abandoned');
    }
    this.#rt.onFinished(this, null, null);
  }
}

function innerOf<T>(p: DurablePromise<T> | Promise<T>): Promise<T> {
  return p instanceof DurablePromise ? p.inner : p;
}

function leavesOf(p: DurablePromise<unknown> | Promise<unknown>): readonly number[] {
  return p instanceof DurablePromise ? p.leaves : [];
}

/** Errors from the database or network (not the handler's own failures): the invocation is
 *  not failed for them; its lease lapses and it is retried from the journal. */
function isInfraError(e: unknown): boolean {
  return e instanceof LeaseLostError || isRetryableDbError(e);
}
