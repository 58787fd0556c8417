// A lazy start (issue 38). engine.call of a handler defined in this process, with no
// idempotency key, no key lock (not exclusive), no delay, no transaction alongside and no trace,
// starts nothing in the database: the handler runs at once under lease epoch 1 held in memory,
// and the invocation's row is written by the same statement as its first durable write (the
// first step's journal entry, or the finish of a handler with no step). A lone ten-step
// invocation is then eleven statements, not twelve.
//
// Why the guarantees hold: the row is created already claimed by this worker at epoch 1 in the
// statement that writes position 1, so no other process can have claimed it or written before
// it (fencing and journal order). Anything that needs the row to exist first writes the start
// as its own statement before it runs: a database step (its transaction fences on the row), a
// sleep, a call or send (the child's start fences on its parent), object state, a suspension;
// and once the handler was handed its id (ctx.invocationId, an awakeable), no step body runs
// before the row exists, so nobody outside can be sent an id that is not there (an id read
// inside a step body is not covered: Context.invocationId). What changes: until its first
// write the invocation is not in the database, so a crash then loses it along with the
// in-process caller that was waiting for it (its work so far was at-least-once anyway); the
// database away at that write does not fail the call, the write waits the outage out (engine
// index note, Faults); lease renewals skip it (there is no lease to renew) unless a statement
// carrying its start went unanswered. engine.stop() writes the start before handing leases
// back; one still unwritten at the stop's deadline is dropped (its caller already has
// ERR_ENGINE_STOPPED), and one already queued or sent may still commit, a row at epoch 1 that
// is resumed elsewhere once its lease lapses. engine.send never starts lazily, nor a call whose
// input jsonb would refuse.
import { LeaseLostError } from './errors';
import type { StartArgs, StartResult } from './invocation-store';

export class PendingStart {
  readonly args: StartArgs;
  /** Set by whatever statement committed the row (batches.ts, or a plain start). */
  written = false;
  /** A statement that carried the start ended without an answer (a cut connection, an
   *  outage): it may have committed. The next carrier, whoever it is, looks for the row first,
   *  and what that statement carried (an entry, a finish) may be there too. */
  uncertain = false;
  /** The handler was handed the id: step bodies wait for the row. */
  exposed = false;
  /** The execution was dropped before its row was written (a stop): no statement may carry
   *  the start from now on, or the row would be created for nobody (held by a stopped worker).
   *  A statement already sent may still commit; that row's lease lapses like any other. */
  dropped = false;
  /** Settles when the statement carrying the start now has answered; null: none does. */
  #carrier: Promise<void> | null = null;
  #release: (() => void) | null = null;

  constructor(args: StartArgs) {
    // What makes startAnswered's refusal unreachable: nothing to dedupe on, nothing to delay.
    if (args.idempotencyKey !== null || args.delayMs !== null || args.worker === null) throw new Error('a lazy start takes no key or delay and needs a worker');
    this.args = args;
  }

  /** True: the caller carries the start in its next statement, and calls release() once that
   *  statement answered (or failed). False: the row is written. One carrier at a time: the
   *  others wait for its answer instead of racing it with a second start of the same id. */
  async take(): Promise<boolean> {
    for (;;) {
      if (this.written) return false;
      if (!this.#carrier) {
        // Taken in the same turn as the check: no await between them.
        this.#carrier = new Promise<void>((resolve) => (this.#release = resolve));
        return true;
      }
      await this.#carrier;
    }
  }

  release(): void {
    const r = this.#release;
    this.#carrier = this.#release = null;
    r?.();
  }
}

/**
 * Sends a statement that can carry the start: `send(start)` while the row is not written (this
 * caller's turn), `send(null)` once it is. After a statement carrying it went unanswered (this
 * caller's retry, or another's carrier: `uncertain`) the row is looked for first: found, that
 * statement committed, and with it what it carried (one statement), so the plain statement's
 * own retry path recognises its entry or finish. The look can miss a statement still running
 * on the server: sent again, the start then meets the row on its primary key once that one
 * commits, which says the same (the id is this call's own, drawn at the call).
 */
export async function withStart<T>(
  lazy: PendingStart | null,
  retry: boolean,
  exists: () => Promise<boolean>,
  send: (start: PendingStart | null) => Promise<T>,
): Promise<T> {
  if (!lazy || !(await lazy.take())) return send(null);
  try {
    if ((retry || lazy.uncertain) && (await exists())) lazy.written = true;
    if (lazy.written) return await send(null);
    // Checked after the awaits above, just before the start goes out.
    if (lazy.dropped) throw new LeaseLostError(lazy.args.id);
    try {
      return await send(lazy);
    } catch (err) {
      if (lazy.written) throw err;
      lazy.uncertain = true;
      if (!startCommitted(err)) throw err;
      lazy.written = true;
      return await send(null);
    }
  } finally {
    lazy.release();
  }
}

/**
 * Marks a start written when engine_start's answer is the row it created: running, claimed at
 * epoch 1, not deduped. A lazy start has a fresh id, no key and no delay (the constructor), so
 * no other answer can come (a second start of the id raises 23505 instead); were one to, this
 * execution would hold no row of its own, and it is dropped rather than taken for written.
 */
export function startAnswered(start: PendingStart, r: StartResult | undefined): void {
  if (!ownStart(r)) throw new LeaseLostError(start.args.id);
  start.written = true;
}

export function ownStart(r: StartResult | undefined): boolean {
  return r !== undefined && !r.deduped && r.status === 'running' && r.epoch === 1;
}

/** Escapes in JSON text, one at a time from the left (so `\\u0000`, an escaped backslash
 *  and the letters u0000, is not taken for one). */
const ESCAPE = /\\(?:u([0-9a-fA-F]{4})|.)/g;

/**
 * True when PostgreSQL's jsonb would refuse this JSON.stringify output (checked against the
 * real server): a NUL (22P05) or a surrogate (22P02) escape. JSON.stringify escapes a surrogate
 * only when it is unpaired, and NUL always. A lazy call with such an input takes the eager path
 * instead, so it fails at the call with the database's error, and nothing runs.
 */
export function jsonbRefuses(text: string | null): boolean {
  if (text === null || !text.includes('\\u')) return false;
  for (const m of text.matchAll(ESCAPE)) {
    if (m[1] === undefined) continue;
    const c = parseInt(m[1], 16);
    if (c === 0 || (c >= 0xd800 && c <= 0xdfff)) return true;
  }
  return false;
}

/** The start collided with its own row: an earlier statement carrying it committed. */
function startCommitted(err: unknown): boolean {
  const e = err as { code?: unknown; constraint_name?: unknown };
  return e?.code === '23505' && e.constraint_name === 'engine_invocations_pkey';
}
