// The engine's client side and its face: definitions, lifecycle, starting invocations and
// waiting for them, awakeables, cancels and the operator views. The worker side (executions,
// claims, leases) is worker.ts and claims.ts. See index.ts for the architecture note.
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../log';
import type { Sql, TxSql } from '../../store/db';
import { AppError, issuesToDetails, notFound } from '../../errors';
import { newId, parseAwakeableId } from '../../ids';
import type { ReadinessCheck } from '../../health';
import type { Registry } from 'prom-client';
import { engineMetrics } from './metrics';
import { defineObject, defineService } from './definitions';
import { resolveHandler, type TraceHooks, type AnyDef, type HandlerName, type Handlers, type InputOf, type ObjectDef, type OutputOf, type ServiceDef } from './types';
import { CancelledError, TerminalError, invalidInput, toFailure } from './errors';
import * as store from './invocation-store';
import { PendingStart, jsonbRefuses } from './lazy-start';
import * as journalStore from './journal-store';
import type { InvocationStatus } from './invocation-store';
import { encode } from './codec';
import { untilAnswered } from './outage';
import { isRetryableDbError } from '../../store/retryable';
import { ResultWaiters, TERMINAL, settleFromStored } from './results';
import { Worker } from './worker';
import { invocationView, journalView, type DefLookup, type InvocationView, type JournalEntryView } from './views';

export type { InvocationView, JournalEntryView } from './views';

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
  /** Tracing (src/tracing's engineTraceHooks); absent: nothing traced, nothing stored. */
  tracing?: TraceHooks;
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

export interface ClientOptions {
  /** Object key; required for virtual objects. */
  key?: string;
  /** Same key and target: the same invocation. */
  idempotencyKey?: string;
  /**
   * Writes that commit in the start's own transaction, or not at all (a caller's record of the
   * request, e.g. its audit row): the start and they are one fact. The engine knows nothing of
   * what they are.
   */
  alongside?: (tx: TxSql) => Promise<unknown>;
}

export interface SendClientOptions extends ClientOptions {
  delayMs?: number;
}

export class Engine {
  readonly sql: Sql;
  readonly logger: Logger;
  readonly workerId: string;
  readonly leaseMs: number;
  readonly #retentionMs: number;
  readonly #purgeEveryMs: number;
  #purgeTimer: NodeJS.Timeout | null = null;
  readonly #defs = new Map<string, AnyDef>();
  readonly #lookup: DefLookup = (service) => this.#defs.get(service);
  readonly #results = new ResultWaiters();
  readonly #worker: Worker;
  #started = false;

  constructor(opts: EngineOptions) {
    this.sql = opts.sql;
    this.workerId = opts.workerId ?? `w-${randomBytes(6).toString('hex')}`;
    this.logger = opts.logger.child({ component: 'engine', workerId: this.workerId });
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.#retentionMs = opts.retentionMs ?? DEFAULT_RETENTION_MS;
    this.#worker = new Worker({
      sql: this.sql,
      logger: this.logger,
      workerId: this.workerId,
      leaseMs: this.leaseMs,
      concurrency: opts.concurrency ?? DEFAULT_CONCURRENCY,
      pollMs: opts.pollMs ?? DEFAULT_POLL_MS,
      stealAfterMs: opts.stealAfterMs ?? DEFAULT_STEAL_AFTER_MS,
      stopTimeoutMs: opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS,
      maxParked: opts.maxParked ?? DEFAULT_MAX_PARKED,
      defs: this.#defs,
      results: this.#results,
      metrics: (counts) => engineMetrics(opts.registry, counts, () => store.backlog(this.sql)),
      client: this,
      tracing: opts.tracing ?? null,
    });
    this.#purgeEveryMs = opts.purgeEveryMs ?? PURGE_EVERY_MS;
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
    this.#purgeTimer = setInterval(() => void this.purge().catch((err: Error) => this.logger.warn({ err: err.message }, 'engine purge failed')), this.#purgeEveryMs);
    this.#purgeTimer.unref();
    await this.#worker.start();
  }

  /** Stops claiming, lets running invocations finish or suspend for a while, then hands the
   *  remaining leases back so another process resumes them at once. */
  async stop(): Promise<void> {
    if (!this.#worker.running) return;
    if (this.#purgeTimer) clearInterval(this.#purgeTimer);
    const handedBack = await this.#worker.stop();
    this.#results.rejectAll(new AppError('ERR_ENGINE_STOPPED', 'engine stopped before the invocation finished'));
    this.logger.info({ handedBack }, 'engine stopped');
  }

  readinessCheck(): ReadinessCheck {
    return { name: 'engine', check: async () => this.#worker.problem() };
  }

  // ---- client -----------------------------------------------------------------------------

  /**
   * Starts an invocation and waits for its result (or its TerminalError). With no idempotency
   * key, key lock (an exclusive handler), delay, transaction alongside or trace, it starts
   * lazily (lazy-start.ts): the handler runs at once and its row is written with its first
   * durable write. The database away then does not fail the call: a step body may have run
   * with nothing recorded, and the write carrying the start waits the outage out (no limit),
   * and so does this call. Pass an idempotency key for a start recorded before anything runs,
   * which fails at once with the database's error when it cannot be.
   */
  async call<T extends AnyDef, K extends HandlerName<T>>(target: T, handler: K, input: InputOf<T, K>, opts: ClientOptions = {}): Promise<OutputOf<T, K>> {
    if (!this.#worker.running) throw new AppError('ERR_ENGINE_NOT_STARTED', 'engine is not running');
    const r = await this.#start(target, handler, input, opts, null, true);
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
    const p = this.#results.wait(id);
    if (!this.#worker.runsHere(id)) void this.#worker.checkResults([id]);
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
    const r = await store.completeEntry(this.sql, ref.invocationId, ref.seq, 'awakeable', value, failure, this.#worker.wakeWorker(), this.leaseMs);
    if (!r.found) throw new AppError('ERR_ENGINE_AWAKEABLE_NOT_FOUND', `awakeable ${id} not found`);
    if (r.claimedEpoch !== undefined && r.claimedEpoch !== null) void this.#worker.resumeClaimed(ref.invocationId, r.claimedEpoch, r.done ?? []);
    return r.accepted === true;
  }

  /** Requests cancellation; the handler sees CancelledError at its next suspension point. */
  async cancel(id: string): Promise<{ status: InvocationStatus }> {
    const r = await store.cancelInvocation(this.sql, id, toFailure(new CancelledError()), this.#worker.wakeWorker(), this.leaseMs);
    if (!r.found) throw notFound('invocation', id);
    const epoch = r.wake?.claimedEpoch;
    if (epoch !== undefined && epoch !== null) void this.#worker.resumeClaimed(id, epoch, r.wake?.done ?? []);
    return { status: r.status! };
  }

  async listInvocations(filter: store.ListFilter = {}): Promise<InvocationView[]> {
    return (await store.listInvocationRows(this.sql, filter)).map((r) => invocationView(r, this.#lookup));
  }

  async getInvocation(id: string): Promise<InvocationView & { journal: JournalEntryView[] }> {
    const row = await store.getInvocationRow(this.sql, id);
    if (!row) throw notFound('invocation', id);
    const journal = await journalStore.loadJournal(this.sql, id);
    return { ...invocationView(row, this.#lookup), journal: journal.map((j) => journalView(row.service, j, this.#lookup)) };
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
    return journalStore.readState(this.sql, typeof def === 'string' ? def : def.name, key);
  }

  async #start(target: AnyDef, handler: string, input: unknown, opts: SendClientOptions, delayMs: number | null, call = false): Promise<store.StartResult> {
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
    const worker = delayMs === null && this.#defs.get(target.name) === target ? this.#worker.claimWorker() : null;
    const id = newId('inv');
    const traceContext = this.#worker.trace.capture();
    const started = { id, service: h.service, handler: h.handler, key, kind: h.kind, input, traceContext };
    const args = { ...started, idempotencyKey: opts.idempotencyKey ?? null, delayMs, worker, leaseMs: this.leaseMs };
    const alongside = opts.alongside;
    // A call that nothing else can find or join runs at once; its row goes with its first
    // write (lazy-start.ts). Not a send: its id is the answer, so the row must exist first.
    // The input is serialized now, as the call saw it; one the database would refuse (or a key
    // with a NUL, which text refuses) takes the eager start, which fails before anything runs.
    if (call && worker !== null && !traceContext && !alongside && opts.idempotencyKey === undefined && h.kind !== 'exclusive') {
      const inputJson = store.json(input);
      if (!jsonbRefuses(inputJson) && !key?.includes('\0')) {
        this.#worker.launch({ ...started, epoch: 1, cancelRequested: false }, [], new PendingStart({ ...args, inputJson }));
        return { id, deduped: false, status: 'running', epoch: 1 };
      }
    }
    const run = alongside
      ? () => this.sql.begin(async (tx) => (await alongside(tx), store.startInvocation(tx, args))) as Promise<store.StartResult>
      : traceContext
        ? () => store.startInvocation(this.sql, args)
        : () => this.#worker.batches.starts.submit(args);
    const r = await run().catch((err: unknown) => this.#startedAnyway(id, err));
    if (!r.deduped && r.status === 'running' && r.epoch) {
      this.#worker.launch({ ...started, epoch: r.epoch, cancelRequested: false }, []);
    } else if (r.status === 'scheduled' && delayMs !== null) {
      this.#worker.armTimer(Date.now() + delayMs);
    }
    return r;
  }

  /**
   * A start that failed on the connection may have committed with its answer lost. The id is
   * this call's own, so its row says which: a started invocation is returned and run like any
   * other, instead of an error inviting a retry that would start the work twice. Only a start
   * known not to have happened (or unknown after START_CHECK_MS) surfaces the error.
   */
  async #startedAnyway(id: string, err: unknown): Promise<store.StartResult> {
    if (!isRetryableDbError(err)) throw err;
    const deadline = Date.now() + START_CHECK_MS;
    const row = await untilAnswered(() => store.getInvocationRow(this.sql, id), {
      abort: () => (Date.now() > deadline ? (err as Error) : null),
      logger: this.logger,
      fields: { invocationId: id, operation: 'start-check' },
    });
    if (!row) throw err;
    this.logger.info({ invocationId: id }, 'engine start answered by a lost connection had committed');
    // Claimed for this process in that start: run it now rather than when its lease lapses.
    const ours = row.status === 'running' && row.leaseOwner === this.workerId;
    return { id, deduped: false, status: row.status, ...(ours ? { epoch: row.leaseEpoch } : {}) };
  }
}

/** How long a start whose answer was lost keeps asking whether it committed (then: unknown,
 *  and the caller gets the database error). */
const START_CHECK_MS = 10_000;

export function createEngine(opts: EngineOptions): Engine {
  return new Engine(opts);
}
