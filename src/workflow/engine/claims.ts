// Claiming and leases, for one worker: when to claim due invocations (a wake-up notification,
// a timer for the next due row, a backstop poll), claiming as many as there are free slots,
// and renewing the leases of the executions this process runs. What a claimed row becomes is
// the worker's business (`dispatch`); this part only decides when and how many.
import type { Logger } from '../../log';
import type { Sql } from '../../store/db';
import { LeaseLostError } from './errors';
import type { ExecutionCore } from './execution-core';
import * as store from './invocation-store';
import type { InvocationRow } from './invocation-store';

export interface ClaimsOptions {
  sql: Sql;
  logger: Logger;
  workerId: string;
  leaseMs: number;
  pollMs: number;
  stealAfterMs: number;
  /** Services this process has handlers for: it never claims the others. */
  services(): string[];
  /** False before start and once stopping: nothing is claimed then. */
  active(): boolean;
  /** Worker slots free now. */
  free(): number;
  dispatch(row: InvocationRow): void;
  /** Executions whose lease this process holds and must renew (running or suspending). */
  held(): ExecutionCore[];
  /** After each poll: the worker checks waits whose outcome may have been written elsewhere. */
  afterPoll(): Promise<void>;
}

export class Claims {
  readonly #o: ClaimsOptions;
  #pollTimer: NodeJS.Timeout | null = null;
  #renewTimer: NodeJS.Timeout | null = null;
  #wakeTimer: NodeJS.Timeout | null = null;
  #wakeAt = Infinity;
  #claiming = false;
  #claimAgain = false;
  /** The last claim filled every free slot: more may be due once a slot frees up. */
  #moreWork = false;
  #lastPollOk = 0;
  /** Set when a lease renewal failed: our leases may have lapsed, so renew before claiming
   *  (else this process would claim its own running invocations and replay them). */
  #renewFailed = false;

  constructor(o: ClaimsOptions) {
    this.#o = o;
  }

  /** When the last poll reached the tables (ms), for readiness. */
  get lastPollOk(): number {
    return this.#lastPollOk;
  }

  async start(): Promise<void> {
    this.#pollTimer = setInterval(() => void this.#poll(), this.#o.pollMs);
    this.#renewTimer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.#o.leaseMs / 3)));
    await this.#poll();
  }

  stop(): void {
    for (const t of [this.#pollTimer, this.#renewTimer]) if (t) clearInterval(t);
    if (this.#wakeTimer) clearTimeout(this.#wakeTimer);
  }

  /** A worker slot was freed: claim again if the last claim left work behind. */
  slotFreed(): void {
    if (this.#moreWork) this.schedule();
  }

  /** Claims due invocations soon; calls made during a claim make it go round once more. */
  schedule(): void {
    if (!this.#o.active()) return;
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    this.#claiming = true;
    void this.#loop();
  }

  /** Claims one invocation (a wake-up of one parked here), regardless of free slots. */
  async claimOne(id: string): Promise<void> {
    try {
      const rows = await store.claimInvocations(this.#o.sql, this.#o.workerId, 1, this.#o.leaseMs, id, this.#o.stealAfterMs, this.#o.services());
      for (const row of rows) this.#o.dispatch(row);
    } catch (err) {
      this.#o.logger.warn({ invocationId: id, err: (err as Error).message }, 'engine claim failed');
    }
  }

  async #loop(): Promise<void> {
    try {
      if (this.#renewFailed) {
        await this.renew();
        if (this.#renewFailed) return;
      }
      do {
        this.#claimAgain = false;
        const free = this.#o.free();
        if (free <= 0) {
          this.#moreWork = true;
          break;
        }
        const rows = await store.claimInvocations(this.#o.sql, this.#o.workerId, free, this.#o.leaseMs, null, this.#o.stealAfterMs, this.#o.services());
        this.#moreWork = rows.length === free;
        for (const row of rows) this.#o.dispatch(row);
        if (this.#moreWork) this.#claimAgain = true;
      } while (this.#claimAgain && this.#o.active());
    } catch (err) {
      this.#o.logger.warn({ err: (err as Error).message }, 'engine claim failed');
    } finally {
      this.#claiming = false;
    }
  }

  /** Claims when `atMs` is due (a sleep's end, a delayed send); the earliest timer wins. */
  armTimer(atMs: number): void {
    if (!this.#o.active() || !Number.isFinite(atMs)) return;
    if (atMs >= this.#wakeAt) return;
    if (this.#wakeTimer) clearTimeout(this.#wakeTimer);
    this.#wakeAt = atMs;
    // A few ms late rather than early: the claim compares with the database clock.
    this.#wakeTimer = setTimeout(() => {
      this.#wakeTimer = null;
      this.#wakeAt = Infinity;
      this.schedule();
    }, Math.max(0, atMs - Date.now()) + 3);
  }

  async #poll(): Promise<void> {
    if (!this.#o.active()) return;
    try {
      this.schedule();
      const next = await store.nextDueAt(this.#o.sql);
      if (next !== null) this.armTimer(next);
      await this.#o.afterPoll();
      this.#lastPollOk = Date.now();
    } catch (err) {
      this.#o.logger.warn({ err: (err as Error).message }, 'engine poll failed');
    }
  }

  /** Renews every held lease; an execution whose lease another process took is dropped. */
  async renew(): Promise<void> {
    const held = this.#o.held();
    if (held.length === 0) {
      this.#renewFailed = false;
      return;
    }
    const epochs = held.map((e) => e.epoch);
    // Taken with the epochs, as the statement is sent: a carrier that commits while it runs
    // marks the start written, but this statement's snapshot may not have seen that row.
    const unwritten = held.map((e) => e.unwritten);
    try {
      const renewed = await store.renewLeases(this.#o.sql, held.map((e) => e.id), epochs, this.#o.leaseMs);
      this.#renewFailed = false;
      held.forEach((e, i) => {
        // Not found and not known written when sent: a lazy start whose carrier may not have committed.
        if (!renewed.has(e.id) && e.state === 'running' && e.epoch === epochs[i] && !unwritten[i]) e.detach(new LeaseLostError(e.id));
      });
    } catch (err) {
      this.#renewFailed = true;
      this.#o.logger.warn({ err: (err as Error).message }, 'engine lease renewal failed');
    }
  }
}
