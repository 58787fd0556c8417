// The worker side of the engine: the executions this process holds (running, suspending,
// parked), what a claimed invocation becomes (resumed in memory or replayed from its journal),
// engine notifications, and the Runtime that executions call back into. When and how much to
// claim, and lease renewal, are claims.ts. The client side (engine.ts) starts invocations
// through it and waits on ResultWaiters that it settles.
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../../log';
import type { Sql } from '../../store/db';
import { notFound } from '../../errors';
import { newId } from '../../ids';
import type { EngineMetrics } from './metrics';
import { Claims } from './claims';
import { decode } from './codec';
import { Context } from './context';
import { EngineTrace } from './trace';
import { resolveHandler, type TraceHooks, type AnyDef, type ChildOptions, type ChildTarget, type ExecutionTarget } from './types';
import { LeaseLostError, TerminalError, checkShape, fromFailure } from './errors';
import { Execution } from './execution';
import type { ExecutionCore } from './execution-core';
import type { Outcome, Runtime } from './runtime';
import * as store from './invocation-store';
import type { PendingStart } from './lazy-start';
import * as journalStore from './journal-store';
import type { InvocationRow, JournalRow } from './invocation-store';
import { untilAnswered } from './outage';
import { EngineBatches } from './batches';
import { ResultWaiters, TERMINAL, settleFromStored } from './results';

/** One channel for every engine message (payload prefixes n/r/d/t/s): one LISTEN per process. */
const CHANNEL = 'unkey_engine';

export interface WorkerOptions {
  sql: Sql;
  logger: Logger;
  workerId: string;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  stealAfterMs: number;
  stopTimeoutMs: number;
  maxParked: number;
  defs: ReadonlyMap<string, AnyDef>;
  results: ResultWaiters;
  metrics: (counts: () => { running: number; parked: number }) => EngineMetrics;
  /** The client side (the engine), for what handlers ask of it: awakeables and cancels. */
  client: WorkerClient;
  tracing: TraceHooks | null;
}

export interface WorkerClient {
  resolveAwakeable(id: string, value: unknown): Promise<boolean>;
  rejectAwakeable(id: string, reason: string): Promise<boolean>;
  cancel(id: string): Promise<unknown>;
}

export class Worker implements Runtime<ExecutionCore> {
  readonly sql: Sql;
  readonly logger: Logger;
  readonly workerId: string;
  readonly leaseMs: number;
  readonly batches: EngineBatches;
  readonly #concurrency: number;
  readonly #pollMs: number;
  readonly #stopTimeoutMs: number;
  readonly #maxParked: number;
  readonly #defs: ReadonlyMap<string, AnyDef>;
  readonly #results: ResultWaiters;
  readonly #client: WorkerClient;
  /** Every execution in memory (running, suspending or parked), by invocation id. */
  readonly #executions = new Map<string, ExecutionCore>();
  readonly #running = new Set<ExecutionCore>();
  readonly #parked = new Set<ExecutionCore>();
  #loading = 0;
  #started = false;
  #stopping = false;
  #listening = false;
  #unlisten: (() => Promise<void>) | null = null;
  readonly #claims: Claims;
  readonly metrics: EngineMetrics;
  readonly trace: EngineTrace;

  constructor(o: WorkerOptions) {
    this.sql = o.sql;
    this.logger = o.logger;
    this.workerId = o.workerId;
    this.leaseMs = o.leaseMs;
    this.batches = new EngineBatches(o.sql);
    this.#concurrency = o.concurrency;
    this.#pollMs = o.pollMs;
    this.#stopTimeoutMs = o.stopTimeoutMs;
    this.#maxParked = o.maxParked;
    this.#defs = o.defs;
    this.#results = o.results;
    this.#client = o.client;
    this.trace = new EngineTrace(o.tracing, o.sql);
    this.metrics = o.metrics(() => ({ running: this.#running.size, parked: this.#parked.size }));
    this.#claims = new Claims({
      sql: o.sql,
      logger: o.logger,
      workerId: o.workerId,
      leaseMs: o.leaseMs,
      pollMs: o.pollMs,
      stealAfterMs: o.stealAfterMs,
      services: () => [...o.defs.keys()],
      active: () => this.running,
      free: () => this.#concurrency - this.#active(),
      dispatch: (row) => void this.#dispatch(row),
      // A lazy start not yet written holds no lease in the database to renew; one whose carrier
      // went unanswered may (claims.ts does not take its missing row for a lost lease).
      held: () => [...this.#running].filter((e) => (e.state === 'running' || e.state === 'suspending') && e.mayHoldLease),
      afterPoll: async () => {
        // Every wait not settled by an execution running here: the work may finish anywhere.
        const waiting = this.#results.ids().filter((id) => !this.runsHere(id));
        if (waiting.length) await this.checkResults(waiting);
      },
    });
  }

  get running(): boolean {
    return this.#started && !this.#stopping;
  }

  async start(): Promise<void> {
    this.#started = true;
    const listener = await this.sql.listen(CHANNEL, (payload) => this.#onNotify(payload), () => {
      // (Re)connected: anything announced while the listener was down is found by a claim.
      this.#listening = true;
      this.#claims.schedule();
    });
    this.#listening = true;
    this.#unlisten = () => listener.unlisten();
    await this.#claims.start();
    this.logger.info({ concurrency: this.#concurrency, leaseMs: this.leaseMs, pollMs: this.#pollMs }, 'engine started');
  }

  /** Stops claiming, lets running invocations finish or suspend for a while, then hands the
   *  remaining leases back so another process resumes them at once. Returns how many. */
  async stop(): Promise<number> {
    this.#stopping = true;
    this.#claims.stop();
    const deadline = Date.now() + this.#stopTimeoutMs;
    // A lazy call in flight has no row to hand back: written now, it is handed back below like
    // the rest (or finishes meanwhile). A start still unwritten at the deadline is dropped.
    const starts = Promise.allSettled([...this.#running].filter((e) => e.unwritten).map((e) => e.ensureStarted()));
    while ((this.#running.size > 0 || this.#loading > 0) && Date.now() < deadline) await delay(10);
    await Promise.race([starts, delay(Math.max(0, deadline - Date.now()), undefined, { ref: false })]);
    const rest = [...this.#running];
    try {
      await store.releaseLeases(this.sql, rest.map((e) => e.id), rest.map((e) => e.epoch));
      await store.unpark(this.sql, this.workerId);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'engine could not hand back leases');
    }
    for (const e of [...this.#executions.values()]) e.detach(new LeaseLostError(e.id));
    await this.#unlisten?.().catch(() => {});
    this.#listening = false;
    return rest.length;
  }

  resolveAwakeable(id: string, value: unknown): Promise<boolean> {
    return this.#client.resolveAwakeable(id, value);
  }

  rejectAwakeable(id: string, reason: string): Promise<boolean> {
    return this.#client.rejectAwakeable(id, reason);
  }

  /** Why this worker is not ready, or null. */
  problem(): string | null {
    if (!this.#started) return 'engine not started';
    if (this.#stopping) return 'engine stopping';
    if (!this.#listening) return 'engine not listening for wake-ups';
    if (Date.now() - this.#claims.lastPollOk > 3 * this.#pollMs + 5_000) return 'engine cannot reach its tables';
    return null;
  }

  // ---- runtime (used by executions) -------------------------------------------------------------

  claimWorker(): string | null {
    return this.#started && !this.#stopping && this.#active() < this.#concurrency ? this.workerId : null;
  }

  /** Wake-ups of invocations parked here are claimed for this process regardless of load:
   *  their execution is already in memory. */
  wakeWorker(): string | null {
    return this.#started && !this.#stopping ? this.workerId : null;
  }

  async startChild(exec: ExecutionCore, seq: number, entry: 'call' | 'send', target: ChildTarget, opts: ChildOptions, retry: boolean): Promise<store.StartResult> {
    if (retry) {
      // The first try may have committed (the parent's entry names the child): do not start twice.
      const child = await journalStore.childAt(this.sql, exec.id, seq);
      if (child) return { id: child.id, deduped: true, status: child.status, result: child.result, error: child.error };
    }
    const delayMs = entry === 'send' && opts.delayMs !== undefined ? opts.delayMs : null;
    const worker = delayMs === null && this.#defs.has(target.service) ? this.claimWorker() : null;
    const id = newId('inv');
    const key = opts.key ?? null;
    const traceContext = this.trace.capture();
    const parent = { id: exec.id, epoch: exec.epoch, seq, entry, name: `${target.service}/${target.handler}` };
    const { service, handler, kind, input } = target;
    const args: store.StartArgs = { id, service, handler, key, kind, input, idempotencyKey: opts.idempotencyKey ?? null, delayMs, worker, leaseMs: this.leaseMs, parent, traceContext };
    // engine_start's fence on the parent (SQLSTATE UE001): this process lost the parent's lease.
    const r = await (traceContext ? store.startInvocation(this.sql, args) : this.batches.starts.submit(args)).catch((err: unknown) => {
      throw (err as { code?: unknown }).code === 'UE001' ? new LeaseLostError(exec.id) : err;
    });
    if (!r.deduped && r.status === 'running' && r.epoch) {
      this.launch({ id, service: target.service, handler: target.handler, key, kind: target.kind, input: target.input, epoch: r.epoch, cancelRequested: false, traceContext }, []);
    } else if (r.status === 'scheduled' && delayMs !== null) {
      this.armTimer(Date.now() + delayMs);
    }
    return r;
  }

  cancelChildren(ids: string[]): void {
    for (const id of ids) {
      void untilAnswered(() => this.#client.cancel(id), {
        abort: () => (this.#stopping ? new Error('engine stopping') : null),
        logger: this.logger,
        fields: { invocationId: id, operation: 'cancel' },
      }).catch((err: Error) => this.logger.warn({ invocationId: id, err: err.message }, 'engine could not cancel a call'));
    }
  }

  onSuspended(exec: ExecutionCore, dueAt: number | null): void {
    this.#running.delete(exec);
    this.#parked.add(exec);
    if (dueAt !== null) this.armTimer(dueAt);
    if (this.#parked.size > this.#maxParked) {
      const oldest = this.#parked.values().next().value;
      if (oldest) oldest.detach(new LeaseLostError(oldest.id));
    }
    this.#claims.slotFreed();
  }

  onResumed(exec: ExecutionCore): void {
    this.#parked.delete(exec);
    this.#running.add(exec);
  }

  onFinished(exec: ExecutionCore, finish: store.FinishResult | null, outcome: Outcome | null): void {
    const wasRunning = this.#running.delete(exec);
    this.#parked.delete(exec);
    if (this.#executions.get(exec.id) === exec) this.#executions.delete(exec.id);
    if (finish?.ok && outcome) {
      this.metrics.finished(exec.target.service, exec.target.handler, outcome.status);
      const fields = { invocationId: exec.id, service: exec.target.service, handler: exec.target.handler };
      if (outcome.status === 'completed') this.logger.debug(fields, 'engine invocation completed');
      else this.logger.warn({ ...fields, status: outcome.status, code: outcome.error.code, err: outcome.error.message }, 'engine invocation failed');
      this.#results.settle(exec.id, () =>
        outcome.status === 'completed' ? Promise.resolve(decode(JSON.parse(outcome.result))) : Promise.reject(fromFailure(outcome.error)),
      );
      const parent = finish.parent;
      if (parent?.claimedEpoch !== undefined && parent.claimedEpoch !== null) void this.resumeClaimed(parent.id, parent.claimedEpoch, parent.done ?? []);
      const next = finish.next;
      if (next?.epoch !== undefined && next.epoch !== null && next.service && next.handler && next.kind) {
        const { id, service, handler, kind, input, epoch } = next;
        // Never ran (it was queued), so there is no journal to load.
        this.launch({ id, service, handler, key: next.key ?? null, kind, input, epoch, cancelRequested: next.cancelRequested ?? false }, []);
      }
    }
    this.trace.finished(exec.target, finish, outcome);
    if (wasRunning) this.#claims.slotFreed();
  }

  // ---- execution ------------------------------------------------------------------------------

  #active(): number {
    return this.#running.size + this.#loading;
  }

  /** Starts (or, from a journal, resumes) an execution this process holds the lease of. */
  launch(target: ExecutionTarget, journal: JournalRow[], lazy: PendingStart | null = null): void {
    const def = this.#defs.get(target.service);
    const h = def && resolveHandler(def, target.handler);
    const exec = new Execution(this, target, journal, lazy);
    this.#executions.get(target.id)?.detach(new LeaseLostError(target.id));
    this.#executions.set(target.id, exec);
    this.#running.add(exec);
    if (!h || h.kind !== target.kind) {
      void exec.execute(
        async () => {
          throw new TerminalError(`no handler ${target.service}/${target.handler} (${target.kind}) is registered`, { code: 'ERR_ENGINE_UNKNOWN_TARGET' });
        },
        (x) => x,
      );
      return;
    }
    const ctx = new Context(exec, this.logger);
    void exec.execute(
      this.trace.wrap(target, () => h.def.run(ctx, h.def.input.parse(target.input))),
      (out) => checkShape(h.def.output, out, `invalid output of ${target.service}/${target.handler}`, 'ERR_ENGINE_OUTPUT_INVALID'),
    );
  }

  /** A claimed row: continue its parked execution if it is still current, else replay it. */
  async #dispatch(row: InvocationRow): Promise<void> {
    const exec = this.#executions.get(row.id);
    if (exec?.canResume(row.leaseEpoch)) {
      void exec.resume(row.leaseEpoch, null);
      return;
    }
    this.#loading++;
    let journal: JournalRow[];
    try {
      journal = await untilAnswered(() => journalStore.loadJournal(this.sql, row.id), {
        abort: () => (this.#stopping ? new LeaseLostError(row.id) : null),
        logger: this.logger,
        fields: { invocationId: row.id, operation: 'load' },
      });
    } catch (err) {
      this.logger.warn({ invocationId: row.id, err: (err as Error).message }, 'engine could not load journal');
      return;
    } finally {
      this.#loading--;
    }
    this.launch(store.targetOf(row), journal);
  }

  async resumeClaimed(id: string, epoch: number, done: store.DoneEntry[] | null): Promise<void> {
    const exec = this.#executions.get(id);
    if (exec?.canResume(epoch)) {
      await exec.resume(epoch, done);
      return;
    }
    try {
      const row = await untilAnswered(() => store.getInvocationRow(this.sql, id), {
        abort: () => (this.#stopping ? new LeaseLostError(id) : null),
        logger: this.logger,
        fields: { invocationId: id, operation: 'resume' },
      });
      if (row && row.status === 'running' && row.leaseEpoch === epoch) await this.#dispatch(row);
    } catch (err) {
      this.logger.warn({ invocationId: id, err: (err as Error).message }, 'engine could not resume invocation');
    }
  }

  // ---- claiming, wake-ups, leases -----------------------------------------------------------

  #onNotify(payload: string): void {
    if (this.#stopping) return;
    const kind = payload[0];
    if (kind === 'n') {
      this.#claims.schedule();
    } else if (kind === 'r') {
      const [, id, owner] = payload.split(':');
      // Another worker's parked invocation is left to it (it resumes from memory); the poll
      // takes it after stealAfterMs if that worker is gone.
      if (owner === this.workerId && id) void this.#claims.claimOne(id);
      else if (!owner) this.#claims.schedule();
    } else if (kind === 'd') {
      // Finished, wherever it ran. A copy parked here is stale; a caller waiting here gets the
      // outcome (unless the execution running here is the one finishing, which settles it).
      const id = payload.slice(2);
      const exec = this.#executions.get(id);
      if (exec?.state === 'suspended') exec.detach(new LeaseLostError(id));
      if (this.#results.has(id) && !this.runsHere(id)) void this.checkResults([id]);
    } else if (kind === 't') {
      this.armTimer(Number(payload.slice(2)));
    } else if (kind === 's') {
      // Another process took over an invocation this one held: drop the stale copy.
      const [, id, previous, epoch] = payload.split(':');
      const exec = id && previous === this.workerId ? this.#executions.get(id) : undefined;
      if (exec && exec.epoch < Number(epoch)) exec.detach(new LeaseLostError(exec.id));
    }
  }

  /** Not while stopping: the leases of executions still running then are handed back, not lost. */
  onLeaseLost(): void {
    if (!this.#stopping) this.metrics.leaseLost();
  }

  /** An execution of `id` runs in this process now (it will settle local waiters itself). */
  runsHere(id: string): boolean {
    const state = this.#executions.get(id)?.state;
    return state === 'running' || state === 'suspending';
  }

  /** Claims when `atMs` is due (a sleep's end, a delayed send). */
  armTimer(atMs: number): void {
    this.#claims.armTimer(atMs);
  }

  async checkResults(ids: string[]): Promise<void> {
    try {
      const rows = await store.outcomeRows(this.sql, ids);
      const seen = new Set(rows.map((r) => r.id));
      for (const id of ids) if (!seen.has(id)) this.#results.settle(id, () => Promise.reject(notFound('invocation', id)));
      for (const row of rows) {
        if (!TERMINAL.has(row.status)) continue;
        const parked = this.#executions.get(row.id);
        if (parked?.state === 'suspended') parked.detach(new LeaseLostError(row.id));
        this.#results.settle(row.id, () => settleFromStored(row.status, row.result, row.error));
      }
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'engine result check failed');
    }
  }
}
