// The engine: definitions, workers and the client. See index.ts for the architecture note.
import { setTimeout as delay } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../log';
import type { Sql } from '../../store/db';
import { AppError, issuesToDetails, notFound } from '../../errors';
import { newId } from '../../ids';
import type { ReadinessCheck } from '../../health';
import type { Registry } from 'prom-client';
import { engineMetrics, type EngineMetrics } from './metrics';
import { decode } from './codec';
import { Context } from './context';
import {
  defineObject,
  defineService,
  resolveHandler,
  type AnyDef,
  type HandlerName,
  type Handlers,
  type InputOf,
  type ObjectDef,
  type OutputOf,
  type ServiceDef,
} from './definitions';
import { CancelledError, LeaseLostError, TerminalError, fromFailure, invalidInput, toFailure } from './errors';
import {
  Execution,
  parseAwakeableId,
  type ChildOptions,
  type ChildTarget,
  type ExecutionTarget,
  type Outcome,
  type Runtime,
} from './execution';
import * as store from './store';
import type { InvocationRow, InvocationStatus, JournalRow } from './store';
import { encode } from './codec';

export interface EngineOptions {
  sql: Sql;
  logger: Logger;
  /** Identifies this process in leases; defaults to a random id. */
  workerId?: string;
  /** Invocations executing at once in this process (suspended ones do not count). */
  concurrency?: number;
  /** Lease length; a crashed process's invocations are resumed elsewhere after this. */
  leaseMs?: number;
  /** Backstop poll for due timers, missed notifications and expired leases. */
  pollMs?: number;
  /** How long another worker's parked invocation is left to it once woken. */
  stealAfterMs?: number;
  /** How long stop() waits for running invocations before handing their leases back. */
  stopTimeoutMs?: number;
  /** Parked executions kept in memory; beyond this the oldest resume from the journal. */
  maxParked?: number;
  /** Prometheus registry for the engine's metrics (none when absent). */
  registry?: Registry;
  /** Finished invocations (and journals, idempotency keys) are deleted after this long. */
  retentionMs?: number;
  /** How often the purge runs (tests shorten it to see the timer work as wired). */
  purgeEveryMs?: number;
}

/** 50 in flight per process keeps the pool (and two cores) busy without queueing on it. */
const DEFAULT_CONCURRENCY = 50;
/** 30 s: renewals every 10 s survive GC pauses and slow queries; a crash costs ≤ 30 s. */
const DEFAULT_LEASE_MS = 30_000;
/** 1 s backstop: notifications normally wake workers within a millisecond. */
const DEFAULT_POLL_MS = 1_000;
/** A woken invocation's parker normally claims it within a few ms; after 1 s it is presumed gone. */
const DEFAULT_STEAL_AFTER_MS = 1_000;
/** 10 s: long enough for steps in flight to finish on SIGTERM, short of orchestrator kill grace. */
const DEFAULT_STOP_TIMEOUT_MS = 10_000;
/** Parked executions are small (a closure and a map); 10k bounds memory to tens of MB. */
const DEFAULT_MAX_PARKED = 10_000;
/** A week: long enough to inspect any failure and to dedupe retried client requests. */
const DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000;
/** One retention sweep a minute is plenty: rows only need to go eventually. */
const PURGE_EVERY_MS = 60_000;
/** Rows per sweep statement: keeps each delete short next to live traffic. */
const PURGE_BATCH = 1_000;

/** One channel for every engine message (payload prefixes n/r/d/t): one LISTEN per process. */
const CHANNEL = 'unkey_engine';

export interface ClientOptions {
  /** Object key; required for virtual objects. */
  key?: string;
  /** Same key and target: the same invocation. */
  idempotencyKey?: string;
}

export interface SendClientOptions extends ClientOptions {
  delayMs?: number;
}

export interface InvocationView {
  id: string;
  service: string;
  handler: string;
  key: string | null;
  kind: string;
  status: InvocationStatus;
  input: unknown;
  result?: unknown;
  error: { name: string; message: string; code: string } | null;
  idempotencyKey: string | null;
  parentId: string | null;
  attempts: number;
  leaseOwner: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

export interface JournalEntryView {
  seq: number;
  kind: string;
  name: string;
  status: 'pending' | 'done';
  value?: unknown;
  failure: { name: string; message: string; code: string } | null;
  wakeAt: string | null;
  childId: string | null;
  createdAt: string;
  completedAt: string | null;
}

interface Deferred {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class Engine implements Runtime {
  readonly sql: Sql;
  readonly logger: Logger;
  readonly workerId: string;
  readonly leaseMs: number;
  readonly #concurrency: number;
  readonly #pollMs: number;
  readonly #stealAfterMs: number;
  readonly #stopTimeoutMs: number;
  readonly #maxParked: number;
  readonly #retentionMs: number;
  readonly #purgeEveryMs: number;
  #purgeTimer: NodeJS.Timeout | null = null;
  readonly #defs = new Map<string, AnyDef>();
  /** Every execution in memory (running, suspending or parked), by invocation id. */
  readonly #executions = new Map<string, Execution>();
  readonly #running = new Set<Execution>();
  readonly #parked = new Set<Execution>();
  #loading = 0;
  readonly #results = new Map<string, Deferred[]>();
  #started = false;
  #stopping = false;
  #listening = false;
  #unlisten: (() => Promise<void>) | null = null;
  #pollTimer: NodeJS.Timeout | null = null;
  #renewTimer: NodeJS.Timeout | null = null;
  #wakeTimer: NodeJS.Timeout | null = null;
  #wakeAt = Infinity;
  #claiming = false;
  #claimAgain = false;
  #moreWork = false;
  #lastPollOk = 0;
  readonly #metrics: EngineMetrics;

  constructor(opts: EngineOptions) {
    this.sql = opts.sql;
    this.workerId = opts.workerId ?? `w-${randomBytes(6).toString('hex')}`;
    this.logger = opts.logger.child({ component: 'engine', workerId: this.workerId });
    this.#concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.#pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
    this.#stealAfterMs = opts.stealAfterMs ?? DEFAULT_STEAL_AFTER_MS;
    this.#stopTimeoutMs = opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
    this.#maxParked = opts.maxParked ?? DEFAULT_MAX_PARKED;
    this.#retentionMs = opts.retentionMs ?? DEFAULT_RETENTION_MS;
    this.#purgeEveryMs = opts.purgeEveryMs ?? PURGE_EVERY_MS;
    this.#metrics = engineMetrics(opts.registry, () => ({ running: this.#running.size, parked: this.#parked.size }));
  }

  // ---- definitions ----------------------------------------------------------------------------

  service<H extends Handlers>(name: string, handlers: H): ServiceDef<H> {
    return this.register(defineService(name, handlers));
  }

  object<E extends Handlers, S extends Handlers = {}>(name: string, handlers: { exclusive: E; shared?: S }): ObjectDef<E, S> {
    return this.register(defineObject(name, handlers));
  }

  register<D extends AnyDef>(def: D): D {
    const existing = this.#defs.get(def.name);
    if (existing && existing !== def) throw new Error(`engine: ${def.name} is already registered`);
    this.#defs.set(def.name, def);
    return def;
  }

  // ---- lifecycle --------------------------------------------------------------------------

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const listener = await this.sql.listen(CHANNEL, (payload) => this.#onNotify(payload), () => {
      // (Re)connected: anything announced while the listener was down is found by a claim.
      this.#listening = true;
      this.#scheduleClaim();
    });
    this.#listening = true;
    this.#unlisten = () => listener.unlisten();
    this.#pollTimer = setInterval(() => void this.#poll(), this.#pollMs);
    this.#renewTimer = setInterval(() => void this.#renew(), Math.max(50, Math.floor(this.leaseMs / 3)));
    this.#purgeTimer = setInterval(() => void this.purge().catch((err: Error) => this.logger.warn({ err: err.message }, 'engine purge failed')), this.#purgeEveryMs);
    this.#purgeTimer.unref();
    await this.#poll();
    this.logger.info({ concurrency: this.#concurrency, leaseMs: this.leaseMs, pollMs: this.#pollMs }, 'engine started');
  }

  /** Stops claiming, lets running invocations finish or suspend for a while, then hands the
   *  remaining leases back so another process resumes them at once. */
  async stop(): Promise<void> {
    if (!this.#started || this.#stopping) return;
    this.#stopping = true;
    for (const t of [this.#pollTimer, this.#renewTimer, this.#purgeTimer]) if (t) clearInterval(t);
    if (this.#wakeTimer) clearTimeout(this.#wakeTimer);
    const deadline = Date.now() + this.#stopTimeoutMs;
    while ((this.#running.size > 0 || this.#loading > 0) && Date.now() < deadline) await delay(10);
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
    const stopped = new AppError('ERR_ENGINE_STOPPED', 'engine stopped before the invocation finished');
    for (const ds of this.#results.values()) for (const d of ds) d.reject(stopped);
    this.#results.clear();
    this.logger.info({ handedBack: rest.length }, 'engine stopped');
  }

  readinessCheck(): ReadinessCheck {
    return {
      name: 'engine',
      check: async () => {
        if (!this.#started) return 'engine not started';
        if (this.#stopping) return 'engine stopping';
        if (!this.#listening) return 'engine not listening for wake-ups';
        if (Date.now() - this.#lastPollOk > 3 * this.#pollMs + 5_000) return 'engine cannot reach its tables';
        return null;
      },
    };
  }

  // ---- client -----------------------------------------------------------------------------

  /** Starts an invocation and waits for its result (or its TerminalError). */
  async call<T extends AnyDef, K extends HandlerName<T>>(target: T, handler: K, input: InputOf<T, K>, opts: ClientOptions = {}): Promise<OutputOf<T, K>> {
    if (!this.#started || this.#stopping) throw new AppError('ERR_ENGINE_NOT_STARTED', 'engine is not running');
    const r = await this.#start(target, handler, input, opts, null);
    return (await this.result(r.id, r)) as OutputOf<T, K>;
  }

  /** Starts an invocation without waiting; the same idempotency key returns the same id. */
  async send<T extends AnyDef, K extends HandlerName<T>>(
    target: T,
    handler: K,
    input: InputOf<T, K>,
    opts: SendClientOptions = {},
  ): Promise<{ id: string; deduped: boolean }> {
    const r = await this.#start(target, handler, input, opts, opts.delayMs ?? null);
    return { id: r.id, deduped: r.deduped };
  }

  /** Waits for an invocation's result. */
  result(id: string, known?: store.StartResult): Promise<unknown> {
    if (known?.deduped && TERMINAL.has(known.status)) return settleFromStored(known.status, known.result, known.error ?? null);
    const p = new Promise<unknown>((resolve, reject) => {
      const list = this.#results.get(id) ?? [];
      list.push({ resolve, reject });
      this.#results.set(id, list);
    });
    if (!this.#executions.has(id)) void this.#checkResults([id]);
    return p;
  }

  async resolveAwakeable(id: string, value?: unknown): Promise<boolean> {
    return this.#completeAwakeable(id, encode(value), null);
  }

  async rejectAwakeable(id: string, reason: string): Promise<boolean> {
    return this.#completeAwakeable(id, null, toFailure(new TerminalError(reason, { code: 'ERR_ENGINE_AWAKEABLE_REJECTED' })));
  }

  async #completeAwakeable(id: string, value: string | null, failure: ReturnType<typeof toFailure> | null): Promise<boolean> {
    const ref = parseAwakeableId(id);
    if (!ref) throw new AppError('ERR_ENGINE_AWAKEABLE_INVALID', `malformed awakeable id ${id}`);
    const r = await store.completeEntry(this.sql, ref.invocationId, ref.seq, 'awakeable', value, failure, this.#wakeWorker(), this.leaseMs);
    if (!r.found) throw new AppError('ERR_ENGINE_AWAKEABLE_NOT_FOUND', `awakeable ${id} not found`);
    if (r.claimedEpoch !== undefined && r.claimedEpoch !== null) void this.#resumeClaimed(ref.invocationId, r.claimedEpoch, r.done ?? []);
    return r.accepted === true;
  }

  /** Requests cancellation; the handler sees CancelledError at its next suspension point. */
  async cancel(id: string): Promise<{ status: InvocationStatus }> {
    const r = await store.cancelInvocation(this.sql, id, toFailure(new CancelledError()), this.#wakeWorker(), this.leaseMs);
    if (!r.found) throw notFound('invocation', id);
    const epoch = r.wake?.claimedEpoch;
    if (epoch !== undefined && epoch !== null) void this.#resumeClaimed(id, epoch, r.wake?.done ?? []);
    return { status: r.status! };
  }

  async listInvocations(filter: store.ListFilter = {}): Promise<InvocationView[]> {
    return (await store.listInvocationRows(this.sql, filter)).map(invocationView);
  }

  async getInvocation(id: string): Promise<InvocationView & { journal: JournalEntryView[] }> {
    const row = await store.getInvocationRow(this.sql, id);
    if (!row) throw notFound('invocation', id);
    const journal = await store.loadJournal(this.sql, id);
    return { ...invocationView(row), journal: journal.map(journalView) };
  }

  /** Deletes invocations finished longer than retentionMs ago; returns how many. Runs every
   *  minute while started; any replica may run it (deletes of the same rows just serialise). */
  async purge(olderThanMs = this.#retentionMs): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await store.purgeFinished(this.sql, olderThanMs, PURGE_BATCH);
      total += n;
      if (n < PURGE_BATCH) break;
    }
    if (total > 0) this.logger.info({ purged: total }, 'engine purged finished invocations');
    return total;
  }

  /** Current state of an object key (operator views and tests). */
  async state(def: ObjectDef<any, any> | string, key: string): Promise<Record<string, unknown>> {
    return store.readState(this.sql, typeof def === 'string' ? def : def.name, key);
  }

  async #start(target: AnyDef, handler: string, input: unknown, opts: SendClientOptions, delayMs: number | null): Promise<store.StartResult> {
    const h = resolveHandler(target, handler);
    if (!h) throw new AppError('ERR_ENGINE_UNKNOWN_TARGET', `no handler ${target.name}/${handler}`);
    if (target.type === 'object' && !opts.key) {
      throw new AppError('ERR_ENGINE_KEY_REQUIRED', `${target.name} is a virtual object: a key is required`, {
        details: [{ field: 'key', message: 'required' }],
      });
    }
    const parsed = h.def.input.safeParse(input);
    if (!parsed.success) throw invalidInput(`${target.name}/${handler}`, issuesToDetails(parsed.error.issues));
    const key = target.type === 'object' ? opts.key! : null;
    // Run it here only if this process has the definition; otherwise a process that does claims it.
    const worker = delayMs === null && this.#defs.get(target.name) === target ? this.claimWorker() : null;
    const id = newId('inv');
    const r = await store.startInvocation(this.sql, {
      id,
      service: h.service,
      handler: h.handler,
      key,
      kind: h.kind,
      input,
      idempotencyKey: opts.idempotencyKey ?? null,
      delayMs,
      worker,
      leaseMs: this.leaseMs,
    });
    if (!r.deduped && r.status === 'running' && r.epoch) {
      this.#launch({ id, service: h.service, handler: h.handler, key, kind: h.kind, input, epoch: r.epoch, cancelRequested: false }, []);
    } else if (r.status === 'scheduled' && delayMs !== null) {
      this.#armTimer(Date.now() + delayMs);
    }
    return r;
  }

  // ---- runtime (used by executions) -------------------------------------------------------------

  claimWorker(): string | null {
    return this.#started && !this.#stopping && this.#active() < this.#concurrency ? this.workerId : null;
  }

  /** Wake-ups of invocations parked here are claimed for this process regardless of load:
   *  their execution is already in memory. */
  #wakeWorker(): string | null {
    return this.#started && !this.#stopping ? this.workerId : null;
  }

  async startChild(exec: Execution, seq: number, entry: 'call' | 'send', target: ChildTarget, opts: ChildOptions): Promise<store.StartResult> {
    const delayMs = entry === 'send' && opts.delayMs !== undefined ? opts.delayMs : null;
    const worker = delayMs === null && this.#defs.has(target.service) ? this.claimWorker() : null;
    const id = newId('inv');
    const key = opts.key ?? null;
    const r = await store.startInvocation(this.sql, {
      id,
      service: target.service,
      handler: target.handler,
      key,
      kind: target.kind,
      input: target.input,
      idempotencyKey: opts.idempotencyKey ?? null,
      delayMs,
      worker,
      leaseMs: this.leaseMs,
      parent: { id: exec.id, epoch: exec.epoch, seq, entry, name: `${target.service}/${target.handler}` },
    });
    if (!r.deduped && r.status === 'running' && r.epoch) {
      this.#launch({ id, service: target.service, handler: target.handler, key, kind: target.kind, input: target.input, epoch: r.epoch, cancelRequested: false }, []);
    } else if (r.status === 'scheduled' && delayMs !== null) {
      this.#armTimer(Date.now() + delayMs);
    }
    return r;
  }

  onSuspended(exec: Execution, dueAt: number | null): void {
    this.#running.delete(exec);
    this.#parked.add(exec);
    if (dueAt !== null) this.#armTimer(dueAt);
    if (this.#parked.size > this.#maxParked) {
      const oldest = this.#parked.values().next().value;
      if (oldest) oldest.detach(new LeaseLostError(oldest.id));
    }
    this.#slotFreed();
  }

  onResumed(exec: Execution): void {
    this.#parked.delete(exec);
    this.#running.add(exec);
  }

  onFinished(exec: Execution, finish: store.FinishResult | null, outcome: Outcome | null): void {
    const wasRunning = this.#running.delete(exec);
    this.#parked.delete(exec);
    if (this.#executions.get(exec.id) === exec) this.#executions.delete(exec.id);
    if (finish?.ok && outcome) {
      this.#metrics.finished(exec.target.service, exec.target.handler, outcome.status);
      if (outcome.status === 'completed') {
        this.logger.debug({ invocationId: exec.id, service: exec.target.service, handler: exec.target.handler }, 'engine invocation completed');
      } else {
        this.logger.warn(
          { invocationId: exec.id, service: exec.target.service, handler: exec.target.handler, status: outcome.status, code: outcome.error.code, err: outcome.error.message },
          'engine invocation failed',
        );
      }
      this.#settleResult(exec.id, () =>
        outcome.status === 'completed' ? Promise.resolve(decode(JSON.parse(outcome.result))) : Promise.reject(fromFailure(outcome.error)),
      );
      const parent = finish.parent;
      if (parent?.claimedEpoch !== undefined && parent.claimedEpoch !== null) void this.#resumeClaimed(parent.id, parent.claimedEpoch, parent.done ?? []);
      const next = finish.next;
      if (next?.epoch !== undefined && next.epoch !== null && next.service && next.handler && next.kind) {
        // Never ran (it was queued), so there is no journal to load.
        this.#launch(
          { id: next.id, service: next.service, handler: next.handler, key: next.key ?? null, kind: next.kind, input: next.input, epoch: next.epoch, cancelRequested: next.cancelRequested ?? false },
          [],
        );
      }
    }
    if (wasRunning) this.#slotFreed();
  }

  // ---- execution ------------------------------------------------------------------------------

  #active(): number {
    return this.#running.size + this.#loading;
  }

  #slotFreed(): void {
    if (this.#moreWork && !this.#stopping) this.#scheduleClaim();
  }

  /** Starts (or, from a journal, resumes) an execution this process holds the lease of. */
  #launch(target: ExecutionTarget, journal: JournalRow[]): void {
    const def = this.#defs.get(target.service);
    const h = def && resolveHandler(def, target.handler);
    const exec = new Execution(this, target, journal);
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
      () => h.def.run(ctx, h.def.input.parse(target.input)),
      (out) => {
        const r = h.def.output.safeParse(out);
        if (!r.success) {
          const details = issuesToDetails(r.error.issues);
          throw new TerminalError(`invalid output of ${target.service}/${target.handler}: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, {
            code: 'ERR_ENGINE_OUTPUT_INVALID',
          });
        }
        return r.data;
      },
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
      journal = await store.loadJournal(this.sql, row.id);
    } catch (err) {
      this.logger.warn({ invocationId: row.id, err: (err as Error).message }, 'engine could not load journal');
      return;
    } finally {
      this.#loading--;
    }
    this.#launch(
      {
        id: row.id,
        service: row.service,
        handler: row.handler,
        key: row.objectKey,
        kind: row.kind,
        input: row.input,
        epoch: row.leaseEpoch,
        cancelRequested: row.cancelRequested,
      },
      journal,
    );
  }

  async #resumeClaimed(id: string, epoch: number, done: store.DoneEntry[] | null): Promise<void> {
    const exec = this.#executions.get(id);
    if (exec?.canResume(epoch)) {
      await exec.resume(epoch, done);
      return;
    }
    try {
      const row = await store.getInvocationRow(this.sql, id);
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
      this.#scheduleClaim();
    } else if (kind === 'r') {
      const [, id, owner] = payload.split(':');
      // Another worker's parked invocation is left to it (it resumes from memory); the poll
      // takes it after stealAfterMs if that worker is gone.
      if (owner === this.workerId && id) void this.#claimOne(id);
      else if (!owner) this.#scheduleClaim();
    } else if (kind === 'd') {
      const id = payload.slice(2);
      if (this.#results.has(id) && !this.#executions.has(id)) void this.#checkResults([id]);
    } else if (kind === 't') {
      this.#armTimer(Number(payload.slice(2)));
    }
  }

  async #claimOne(id: string): Promise<void> {
    try {
      const rows = await store.claimInvocations(this.sql, this.workerId, 1, this.leaseMs, id, this.#stealAfterMs, [...this.#defs.keys()]);
      for (const row of rows) void this.#dispatch(row);
    } catch (err) {
      this.logger.warn({ invocationId: id, err: (err as Error).message }, 'engine claim failed');
    }
  }

  #scheduleClaim(): void {
    if (!this.#started || this.#stopping) return;
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    this.#claiming = true;
    void this.#claimLoop();
  }

  async #claimLoop(): Promise<void> {
    try {
      do {
        this.#claimAgain = false;
        const free = this.#concurrency - this.#active();
        if (free <= 0) {
          this.#moreWork = true;
          break;
        }
        const rows = await store.claimInvocations(this.sql, this.workerId, free, this.leaseMs, null, this.#stealAfterMs, [...this.#defs.keys()]);
        this.#moreWork = rows.length === free;
        for (const row of rows) void this.#dispatch(row);
        if (this.#moreWork) this.#claimAgain = true;
      } while (this.#claimAgain && !this.#stopping);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'engine claim failed');
    } finally {
      this.#claiming = false;
    }
  }

  #armTimer(atMs: number): void {
    if (!this.#started || this.#stopping || !Number.isFinite(atMs)) return;
    if (atMs >= this.#wakeAt) return;
    if (this.#wakeTimer) clearTimeout(this.#wakeTimer);
    this.#wakeAt = atMs;
    // A few ms late rather than early: the claim compares with the database clock.
    this.#wakeTimer = setTimeout(() => {
      this.#wakeTimer = null;
      this.#wakeAt = Infinity;
      this.#scheduleClaim();
    }, Math.max(0, atMs - Date.now()) + 3);
  }

  async #poll(): Promise<void> {
    if (this.#stopping) return;
    try {
      this.#scheduleClaim();
      const next = await store.nextDueAt(this.sql);
      if (next !== null) this.#armTimer(next);
      const remote = [...this.#results.keys()].filter((id) => !this.#executions.has(id));
      if (remote.length) await this.#checkResults(remote);
      this.#lastPollOk = Date.now();
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'engine poll failed');
    }
  }

  async #renew(): Promise<void> {
    const held = [...this.#running].filter((e) => e.state === 'running' || e.state === 'suspending');
    if (held.length === 0) return;
    const epochs = held.map((e) => e.epoch);
    try {
      const renewed = await store.renewLeases(this.sql, held.map((e) => e.id), epochs, this.leaseMs);
      held.forEach((e, i) => {
        if (!renewed.has(e.id) && e.state === 'running' && e.epoch === epochs[i]) e.detach(new LeaseLostError(e.id));
      });
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'engine lease renewal failed');
    }
  }

  async #checkResults(ids: string[]): Promise<void> {
    try {
      const rows = await store.outcomeRows(this.sql, ids);
      const seen = new Set(rows.map((r) => r.id));
      for (const id of ids) if (!seen.has(id)) this.#settleResult(id, () => Promise.reject(notFound('invocation', id)));
      for (const row of rows) {
        if (TERMINAL.has(row.status)) this.#settleResult(row.id, () => settleFromStored(row.status, row.result, row.error));
      }
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'engine result check failed');
    }
  }

  #settleResult(id: string, outcome: () => Promise<unknown>): void {
    const list = this.#results.get(id);
    if (!list) return;
    this.#results.delete(id);
    const p = outcome();
    for (const d of list) p.then(d.resolve, d.reject);
  }
}

const TERMINAL = new Set<InvocationStatus>(store.TERMINAL_STATUSES);

function settleFromStored(status: InvocationStatus, result: unknown, error: store.InvocationRow['error']): Promise<unknown> {
  if (status === 'completed') return Promise.resolve(decode(result));
  return Promise.reject(fromFailure(error ?? { name: 'TerminalError', message: `invocation ${status}`, code: 'ERR_ENGINE_FAILED' }));
}

function iso(d: Date | null): string | null {
  return d ? new Date(d).toISOString() : null;
}

function invocationView(r: InvocationRow): InvocationView {
  return {
    id: r.id,
    service: r.service,
    handler: r.handler,
    key: r.objectKey,
    kind: r.kind,
    status: r.status,
    input: r.input,
    ...(r.status === 'completed' ? { result: decode(r.result) } : {}),
    error: r.error,
    idempotencyKey: r.idempotencyKey,
    parentId: r.parentId,
    attempts: r.attempts,
    leaseOwner: r.leaseOwner,
    createdAt: iso(r.createdAt)!,
    updatedAt: iso(r.updatedAt)!,
    completedAt: iso(r.completedAt),
  };
}

function journalView(j: JournalRow): JournalEntryView {
  return {
    seq: j.seq,
    kind: j.kind,
    name: j.name,
    status: j.status,
    ...(j.status === 'done' && !j.failure ? { value: decode(j.value) } : {}),
    failure: j.failure,
    wakeAt: iso(j.wakeAt),
    childId: j.childId,
    createdAt: iso(j.createdAt)!,
    completedAt: iso(j.completedAt),
  };
}

export function createEngine(opts: EngineOptions): Engine {
  return new Engine(opts);
}
