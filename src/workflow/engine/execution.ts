// The durable operations a handler's Context offers (steps, database steps, sleeps,
// awakeables, calls and sends, object state, combinators), on top of ExecutionCore's journal
// positions, tracking and suspension. Each takes the next journal position: replayed when the
// journal holds it, else executed and written under the lease.
import { AbortError } from 'p-retry';
import type { TxSql } from '../../store/db';
import { decode, encode } from './codec';
import { DurablePromise } from './durable-promise';
import { LeaseLostError, TerminalError, TimeoutError, fromFailure, type StoredFailure } from './errors';
import { awakeableId } from '../../ids';
import { ExecutionCore } from './execution-core';
import * as store from './invocation-store';
import * as journalStore from './journal-store';
import { attemptStep, type StepHost } from './step-attempts';
import { startAnswered, withStart, type PendingStart } from './lazy-start';
import type { ChildOptions, ChildTarget, RunOptions } from './types';

export class Execution extends ExecutionCore {
  /** The handler read its own id (ctx.invocationId, an awakeable's): it may hand it to others,
   *  so the row is written now, and step bodies from here on wait for it. */
  exposeId(): void {
    const lazy = this._lazy;
    if (!lazy || lazy.written || lazy.exposed) return;
    lazy.exposed = true;
    // Its failure surfaces on the next operation, which waits for the row again.
    this.ensureStarted().catch(() => {});
  }

  async ensureStarted(): Promise<void> {
    const lazy = this._lazy;
    if (!lazy || lazy.written) return;
    await this._durable('start', (retry) =>
      withStart(lazy, retry, () => this._rowExists(), async (start) => {
        if (!start) return;
        startAnswered(start, await this._rt.batches.starts.submit(start.args));
      }),
    );
  }

  /** A journal write of a completed position; a retry recognises its own earlier write. */
  protected async _journalDone(seq: number, kind: string, name: string, value: string | null, failure: StoredFailure | null, retry: boolean): Promise<boolean> {
    const write = (start: PendingStart | null) => this._rt.batches.journal.submit({ invocationId: this.id, epoch: this.epoch, seq, kind, name, value, failure, start });
    if (await withStart(this._lazy, retry, () => this._rowExists(), write)) return true;
    // `uncertain`: a statement that carried the lazy start went unanswered, and this entry may be written.
    return (retry || this._lazy?.uncertain === true) && (await journalStore.ownEntry(this.sql, this.id, this.epoch, seq, kind, name)) !== null;
  }

  // ---- operations (used by Context) ---------------------------------------------------------

  run<T>(name: string, fn: (attempt: number) => Promise<T> | T, opts: RunOptions = {}): DurablePromise<T> {
    const taken = this._take('run', name);
    if (!taken) return this._stalled();
    const { seq, entry } = taken;
    if (entry) return this._replayed<T>(entry);
    const p = this._track(async () => {
      // An id handed out must exist before a body can pass it on (lazy-start.ts).
      if (this._lazy?.exposed && !this._lazy.written) await this.ensureStarted();
      const { value, failure } = await attemptStep(this._stepHost(), name, opts, async (attempt) => encode(await fn(attempt)));
      if (!(await this._durable('journal', (retry) => this._journalDone(seq, 'run', name, value, failure, retry)))) this._lost();
      if (failure) throw fromFailure(failure);
      return decode(JSON.parse(value!)) as T;
    });
    return new DurablePromise(this, p, []);
  }

  runTx<T>(name: string, fn: (tx: TxSql) => Promise<T>, opts: RunOptions = {}): DurablePromise<T> {
    const taken = this._take('run', name);
    if (!taken) return this._stalled();
    const { seq, entry } = taken;
    if (entry) return this._replayed<T>(entry);
    let tries = 0;
    const p = this._track(async () => {
      // Its transaction fences on the invocation's row.
      if (this.unwritten) await this.ensureStarted();
      const { value, failure } = await attemptStep(this._stepHost(), name, opts, async () =>
        this.sql.begin(async (tx) => {
          if (!(await journalStore.fenceInTx(tx, this.id, this.epoch))) throw new AbortError(new LeaseLostError(this.id));
          if (tries++ > 0) {
            // An earlier try may have committed without our hearing of it (the connection
            // died during COMMIT): then its entry is here, and fn must not run again.
            const done = await journalStore.ownEntry(tx, this.id, this.epoch, seq, 'run', name);
            if (done) return JSON.stringify(done.value);
          }
          const encoded = encode(await fn(tx));
          if (!(await journalStore.journalDone(tx, this.id, this.epoch, seq, 'run', name, encoded, null))) {
            throw new AbortError(new LeaseLostError(this.id));
          }
          return encoded;
        }) as Promise<string>,
      );
      if (failure) {
        if (!(await this._durable('journal', (retry) => this._journalDone(seq, 'run', name, null, failure, retry)))) this._lost();
        throw fromFailure(failure);
      }
      return decode(JSON.parse(value!)) as T;
    });
    return new DurablePromise(this, p, []);
  }

  _stepHost(): StepHost {
    return {
      sql: this.sql,
      logger: this._rt.logger,
      invocationId: this.id,
      gone: () => this.state === 'detached' || this.state === 'finished',
      lost: () => this._lost(),
      retrying: () => this._rt.metrics.stepRetried(this.target.service),
    };
  }

  sleep(name: string, ms: number): DurablePromise<void> {
    const taken = this._take('sleep', name);
    if (!taken) return this._stalled();
    const { seq, entry } = taken;
    if (entry?.status === 'done') return this._replayed<void>(entry);
    const wait = this._waitFor<void>(seq, 'sleep');
    if (entry) return new DurablePromise(this, wait, [seq]);
    const written = this._track(async () => {
      const ok = await this._durable('sleep', async (retry) => {
        if (await journalStore.journalSleep(this.sql, this.id, this.epoch, seq, name, Math.max(0, ms))) return true;
        return retry && (await journalStore.ownEntry(this.sql, this.id, this.epoch, seq, 'sleep', name)) !== null;
      });
      if (!ok) this._lost();
    });
    return new DurablePromise(this, written.then(() => wait), [seq]);
  }

  awakeable<T>(): { id: string; promise: DurablePromise<T> } {
    const taken = this._take('awakeable', 'awakeable');
    // Position 0 is never journaled: resolving this id finds nothing, and nothing waits on it.
    if (!taken) return { id: awakeableId(this.id, 0), promise: this._stalled<T>() };
    const { seq, entry } = taken;
    const id = awakeableId(this.id, seq);
    this.exposeId();
    if (entry?.status === 'done') return { id, promise: this._replayed<T>(entry) };
    if (!entry) this._unrecordedAwakeables.add(seq);
    return { id, promise: new DurablePromise(this, this._waitFor<T>(seq, 'awakeable'), [seq]) };
  }

  call<T>(target: ChildTarget, opts: ChildOptions): DurablePromise<T> {
    const name = `${target.service}/${target.handler}`;
    const taken = this._take('call', name);
    if (!taken) return this._stalled();
    const { seq, entry } = taken;
    if (entry?.status === 'done') return this._replayed<T>(entry);
    const wait = this._waitFor<T>(seq, 'call');
    if (entry) return new DurablePromise(this, wait, [seq]);
    const started = this._track(async () => {
      const r = await this._durable('call', (retry) => this._rt.startChild(this, seq, 'call', target, opts, retry));
      if (r.deduped && r.status !== undefined && store.TERMINAL_STATUSES.includes(r.status)) {
        this._deliver({ seq, value: r.result ?? null, failure: r.error ?? null });
      }
    });
    return new DurablePromise(this, started.then(() => wait), [seq]);
  }

  send(target: ChildTarget, opts: ChildOptions): DurablePromise<string> {
    const name = `${target.service}/${target.handler}`;
    const taken = this._take('send', name);
    if (!taken) return this._stalled();
    const { seq, entry } = taken;
    if (entry) return this._replayed<string>(entry);
    const p = this._track(async () => (await this._durable('send', (retry) => this._rt.startChild(this, seq, 'send', target, opts, retry))).id);
    return new DurablePromise(this, p, []);
  }

  stateGet<T>(name: string): DurablePromise<T | undefined> {
    const taken = this._take('get', name);
    if (!taken) return this._stalled();
    const { seq, entry } = taken;
    if (entry) return this._replayed<T | undefined>(entry);
    const prev = this._stateChain;
    const p = this._track(async () => {
      await prev.catch(() => {});
      const key = this.#key();
      const r = await this._durable('state', async (retry) => {
        const got = await journalStore.journalStateGet(this.sql, this.id, this.epoch, seq, this.target.service, key, name);
        if (got.ok || !retry) return got;
        const own = await journalStore.ownEntry(this.sql, this.id, this.epoch, seq, 'get', name);
        return own ? { ok: true, value: own.value } : got;
      });
      if (!r.ok) this._lost();
      return decode(r.value) as T | undefined;
    });
    this._stateChain = p;
    return new DurablePromise(this, p, []);
  }

  stateWrite(name: string, value: unknown): DurablePromise<void> {
    if (this.target.kind !== 'exclusive') {
      throw new TerminalError(`state of ${this.target.service} can only be written by exclusive handlers`, { code: 'ERR_ENGINE_STATE_READONLY' });
    }
    const taken = this._take(value === undefined ? 'clear' : 'set', name);
    if (!taken) return this._stalled();
    const { seq, entry } = taken;
    if (entry) return this._replayed<void>(entry);
    const encoded = value === undefined ? null : JSON.stringify(value);
    const prev = this._stateChain;
    const p = this._track(async () => {
      await prev.catch(() => {});
      const key = this.#key();
      const kind = value === undefined ? 'clear' : 'set';
      const ok = await this._durable('state', async (retry) => {
        if (await journalStore.journalStateWrite(this.sql, this.id, this.epoch, seq, this.target.service, key, name, encoded)) return true;
        return retry && (await journalStore.ownEntry(this.sql, this.id, this.epoch, seq, kind, name)) !== null;
      });
      if (!ok) this._lost();
    });
    this._stateChain = p;
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

  #raceIndexed<T>(ps: readonly (DurablePromise<T> | Promise<T>)[]): Promise<Raced<T>> {
    const taken = this._take('race', 'race');
    if (!taken) return this._stalled<Raced<T>>().inner;
    const { seq, entry } = taken;
    const settle = (i: number) =>
      innerOf(ps[i]!).then(
        (value) => ({ index: i, ok: true, value }),
        (error: unknown) => ({ index: i, ok: false, error }),
      );
    if (entry) return settle(decode(entry.value) as number);
    return Promise.race(ps.map((_, i) => settle(i))).then((w) =>
      this._track(async () => {
        if (!(await this._durable('journal', (retry) => this._journalDone(seq, 'race', 'race', encode(w.index), null, retry)))) this._lost();
        return w;
      }),
    );
  }

  resolveAwakeable(id: string, value: unknown): DurablePromise<boolean> {
    return this.run(`resolve ${id}`, () => this._rt.resolveAwakeable(id, value));
  }

  rejectAwakeable(id: string, reason: string): DurablePromise<boolean> {
    return this.run(`reject ${id}`, () => this._rt.rejectAwakeable(id, reason));
  }

}

/** Which part of a race settled first, and how. */
interface Raced<T> {
  index: number;
  ok: boolean;
  value?: T;
  error?: unknown;
}

function innerOf<T>(p: DurablePromise<T> | Promise<T>): Promise<T> {
  return p instanceof DurablePromise ? p.inner : p;
}

function leavesOf(p: DurablePromise<unknown> | Promise<unknown>): readonly number[] {
  return p instanceof DurablePromise ? p.leaves : [];
}

