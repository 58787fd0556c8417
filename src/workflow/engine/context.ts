// What a handler receives. Every method that returns a DurablePromise is a journaled step:
// call them in the same order on every run of the same invocation (no branching on wall-clock
// time or randomness outside ctx.run), or the journal check fails the invocation.
import type { Logger } from '../../log';
import type { TxSql } from '../../store/db';
import { resolveHandler, type AnyDef, type ChildTarget, type HandlerName, type InputOf, type OutputOf, type RunOptions } from './types';
import type { DurablePromise } from './durable-promise';
import { TerminalError, checkShape } from './errors';
import type { Execution } from './execution';

export interface CallOptions {
  /** Object key; required when the target is a virtual object. */
  key?: string;
  /** Same key, same target: the same invocation (its result if finished). */
  idempotencyKey?: string;
}

export interface SendOptions extends CallOptions {
  /** Start the invocation this much later (a durable delayed send). */
  delayMs?: number;
}

export class Context {
  readonly #exec: Execution;
  readonly #root: Logger;
  #logger: Logger | undefined;

  /** @internal */
  constructor(exec: Execution, logger: Logger) {
    this.#exec = exec;
    this.#root = logger;
  }

  /** Logger bound to this invocation (created on first use: most handlers never log). */
  get logger(): Logger {
    this.#logger ??= this.#root.child({ invocationId: this.#exec.id, service: this.service, handler: this.handler });
    return this.#logger;
  }

  /**
   * This invocation's id. A lazy call (lazy-start.ts) has no row until its first write; reading
   * the id starts writing it in the background, and no step body runs before it is written.
   * Code between the read and the next step is not held: an id handed out there (an emitter, a
   * log line, an engine.send made directly, not through ctx) can reach a lookup or cancel
   * (engine.cancel, getInvocation) that answers "not found" while that write is in flight. Read
   * inside a step body, the id can be handed out before the row exists, and if that body's
   * write never happens, never exists. To hand it out, read it outside any step body and send
   * it from the next step: that step's body runs only once the row is written.
   */
  get invocationId(): string {
    this.#exec.exposeId();
    return this.#exec.id;
  }

  /** Service or object name. */
  get service(): string {
    return this.#exec.target.service;
  }

  get handler(): string {
    return this.#exec.target.handler;
  }

  /** The object key (virtual objects only). */
  get key(): string {
    const k = this.#exec.target.key;
    if (k === null) throw new TerminalError(`service ${this.service} has no key`, { code: 'ERR_ENGINE_NO_STATE' });
    return k;
  }

  /** A journaled side effect, retried with exponential backoff; TerminalError is final. The
   *  value must be JSON-serialisable; replays return the journaled value without running fn. */
  run<T>(name: string, fn: (attempt: number) => Promise<T> | T, opts?: RunOptions): DurablePromise<T> {
    return this.#exec.run(name, fn, opts);
  }

  /** A database step: fn's writes and the journal entry commit in one transaction, so the
   *  writes happen exactly once. Retried like run (each attempt a fresh transaction). */
  runTx<T>(name: string, fn: (tx: TxSql) => Promise<T>, opts?: RunOptions): DurablePromise<T> {
    return this.#exec.runTx(name, fn, opts);
  }

  /** A durable timer: survives restarts; the invocation holds no worker while it waits. */
  sleep(ms: number): DurablePromise<void>;
  sleep(name: string, ms: number): DurablePromise<void>;
  sleep(a: string | number, b?: number): DurablePromise<void> {
    return typeof a === 'number' ? this.#exec.sleep('sleep', a) : this.#exec.sleep(a, b ?? 0);
  }

  /** A promise completed from anywhere by id (engine.resolveAwakeable / rejectAwakeable). */
  awakeable<T = unknown>(): { id: string; promise: DurablePromise<T> } {
    return this.#exec.awakeable<T>();
  }

  resolveAwakeable(id: string, value?: unknown): DurablePromise<boolean> {
    return this.#exec.resolveAwakeable(id, value);
  }

  rejectAwakeable(id: string, reason: string): DurablePromise<boolean> {
    return this.#exec.rejectAwakeable(id, reason);
  }

  /** Object state (virtual objects). Reads are journaled so replays see the same value. */
  get<T = unknown>(name: string): DurablePromise<T | undefined> {
    return this.#exec.stateGet<T>(name);
  }

  /** Exclusive handlers only. Await it before reading the value back. */
  set(name: string, value: unknown): DurablePromise<void> {
    if (value === undefined) throw new TerminalError('state values cannot be undefined; use clear', { code: 'ERR_ENGINE_STATE_UNDEFINED' });
    return this.#exec.stateWrite(name, value);
  }

  clear(name: string): DurablePromise<void> {
    return this.#exec.stateWrite(name, undefined);
  }

  /** Calls another handler; the future settles with its result (fan out, then `all`). */
  call<T extends AnyDef, K extends HandlerName<T>>(target: T, handler: K, input: InputOf<T, K>, opts: CallOptions = {}): DurablePromise<OutputOf<T, K>> {
    return this.#exec.call<OutputOf<T, K>>(childTarget(target, handler, input, opts.key), opts);
  }

  /** Starts another handler without waiting (optionally later); resolves to its invocation id. */
  send<T extends AnyDef, K extends HandlerName<T>>(target: T, handler: K, input: InputOf<T, K>, opts: SendOptions = {}): DurablePromise<string> {
    return this.#exec.send(childTarget(target, handler, input, opts.key), opts);
  }

  all<T extends readonly unknown[]>(ps: { [K in keyof T]: DurablePromise<T[K]> | Promise<T[K]> }): DurablePromise<T> {
    return this.#exec.all<T>(ps);
  }

  /** Every part's outcome, failures included (like RequestFuture responses collected in turn). */
  allSettled<T>(ps: readonly (DurablePromise<T> | Promise<T>)[]): DurablePromise<PromiseSettledResult<T>[]> {
    return this.#exec.allSettled(ps);
  }

  /** First to settle wins (the winner is journaled, so replays agree). */
  race<T>(ps: readonly (DurablePromise<T> | Promise<T>)[]): DurablePromise<T> {
    return this.#exec.race(ps);
  }
}

/** Validates a call's input against the target's schema (a bad call is a bug: terminal). */
export function childTarget(target: AnyDef, handler: string, input: unknown, key: string | undefined): ChildTarget & { key: string | null } {
  const h = resolveHandler(target, handler);
  if (!h) throw new TerminalError(`no handler ${target.name}/${handler}`, { code: 'ERR_ENGINE_UNKNOWN_TARGET' });
  if (target.type === 'object' && !key) throw new TerminalError(`${target.name} is a virtual object: a key is required`, { code: 'ERR_ENGINE_KEY_REQUIRED' });
  checkShape(h.def.input, input, `invalid input for ${target.name}/${handler}`, 'ERR_ENGINE_INPUT_INVALID');
  return { service: h.service, handler: h.handler, kind: h.kind, input, key: target.type === 'object' ? key! : null };
}
