// ctrl's tailer: one per process. It polls the outbox for settled rows (one query per poll,
// whatever the number of connected agents), keeps them in a bounded ChangeBuffer, and wakes the
// streams waiting on the regions the new rows touch. A NOTIFY sent by every change (see
// store/changes.ts recordChange) rings the doorbell so a commit is picked up at once; the
// backstop timer covers a lost notification, a dropped LISTEN connection, and the case where
// a row is committed but not yet settled because an older transaction is still open (then the
// tailer looks again on a short, growing delay until it settles). Each poll also checks that
// the epoch belongs to the database's current history and renews it when not (a failover or
// restore: store/system.ts fenceFeed), before handing out a row of that history.
import type { Logger } from '../log';
import type { Sql } from '../store/db';
import * as changes from '../store/changes';
import { loadDesiredRows } from '../store/desired-state';
import { fenceFeed, getFeedEpoch } from '../store/system';
import { ChangeBuffer, type BufferedChange } from './buffer';
import { stateFor, stateMap } from './desired';
import { encodeCursor } from './cursor';
import type { DesiredState } from './wire';
import { pushToWaiters, type PushTarget, type Waiter, type WakeReason } from './fanout';

export type { WakeReason, PushTarget } from './fanout';

export interface TailerOptions {
  sql: Sql;
  logger: Logger;
  /** Backstop poll interval when idle. */
  pollMs?: number;
  /** Entries kept in memory. */
  bufferSize?: number;
  /** Bytes of states and lines kept in memory (see ChangeBuffer). */
  bufferBytes?: number;
}

/**
 * Idle backstop. The doorbell delivers commits immediately; this only bounds how long a lost
 * notification or an unrelated long transaction can delay a change. 100 ms costs 10 queries/s.
 */
export const DEFAULT_POLL_MS = 100;
/** 50,000 entries (~15 MB with states) cover minutes of heavy churn, so reconnects hit memory. */
export const DEFAULT_BUFFER_SIZE = 50_000;
/**
 * 64 MB of buffered states and lines: minutes of ordinary churn, while one 3 MB env changed
 * over and over costs a few dozen entries, not tens of thousands.
 */
export const DEFAULT_BUFFER_BYTES = 64 * 1024 * 1024;
/**
 * Weight of an entry per byte of its line: the line itself plus the parsed state it was built
 * from (a JS object weighs about twice its JSON).
 */
const BYTES_PER_LINE_BYTE = 3;
/** Rows per tail query: one JSON round trip of this size stays in the low milliseconds. */
const TAIL_BATCH = 5_000;
/** First retry delay while rows wait to settle; doubles up to the backstop interval. */
const SETTLE_RETRY_MIN_MS = 2;


export class Tailer {
  readonly sql: Sql;
  private readonly logger: Logger;
  private readonly pollMs: number;
  buffer: ChangeBuffer;
  epoch = '';
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Per region, the push in progress: pushes of one region go in append order. */
  private readonly pushing = new Map<string, Promise<void>>();
  private closed = false;
  private rung = false;
  private ring: (() => void) | undefined;
  private loopDone: Promise<void> | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private readonly bufferSize: number;
  private readonly bufferBytes: number;
  /** Tail queries issued, for benchmarks and metrics. */
  polls = 0;
  /** When a tail query last succeeded (0: never); readiness reads it. */
  lastTailAt = 0;
  /** The first committed-but-unsettled row seen by the last poll, and since when it is first. */
  private firstPending: { key: string; since: number } | undefined;

  constructor(opts: TailerOptions) {
    this.sql = opts.sql;
    this.logger = opts.logger;
    this.pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
    this.bufferSize = opts.bufferSize ?? DEFAULT_BUFFER_SIZE;
    this.bufferBytes = opts.bufferBytes ?? DEFAULT_BUFFER_BYTES;
    this.buffer = new ChangeBuffer(this.bufferSize, { txid: '0', id: '0' }, this.bufferBytes);
  }

  get isClosed() {
    return this.closed;
  }

  async start(): Promise<void> {
    // A ctrl that starts just after a failover hands out no cursor of the old history.
    if (await fenceFeed(this.sql)) this.logger.warn('feed epoch renewed: the database history changed (failover or restore)');
    this.epoch = await getFeedEpoch(this.sql);
    this.buffer = new ChangeBuffer(this.bufferSize, await changes.settledHead(this.sql), this.bufferBytes);
    // onlisten runs on every (re)connection of the LISTEN socket: ring then, since notifications
    // sent while it was down are lost.
    const l = await this.sql.listen(
      changes.FEED_CHANNEL,
      () => this.doorbell(),
      () => this.doorbell(),
    );
    this.unlisten = () => l.unlisten();
    this.loopDone = this.loop();
  }

  private doorbell(): void {
    this.rung = true;
    this.ring?.();
  }

  private sleep(ms: number): Promise<void> {
    if (this.rung || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.ring = done;
    });
  }

  private async loop(): Promise<void> {
    let settleDelay = SETTLE_RETRY_MIN_MS;
    while (!this.closed) {
      this.rung = false;
      let r: changes.TailResult;
      try {
        this.polls++;
        r = await changes.tailSettled(this.sql, this.buffer.head, TAIL_BATCH);
        this.lastTailAt = Date.now();
        this.notePending(r.firstPending);
      } catch (err) {
        if (this.closed) return;
        this.logger.error({ err }, 'feed tail query failed');
        await this.sleep(this.pollMs * 10);
        continue;
      }
      if (this.closed) return;
      if (!r.fenced) {
        // The database's history changed under the epoch (a promoted standby, a restore): its
        // rows may reuse positions of cursors already handed out. Renew the epoch first; the
        // next poll sees it and resets every stream.
        await this.fence();
        continue;
      }
      if (r.epoch !== this.epoch) {
        await this.resetEpoch(r.epoch);
        continue;
      }
      if (r.rows.length) {
        for (const region of this.buffer.append(r.rows)) this.deliver(region);
      }
      if (r.rows.length === TAIL_BATCH) continue;
      if (r.pending) {
        await this.sleep(settleDelay);
        settleDelay = Math.min(settleDelay * 2, this.pollMs);
      } else {
        settleDelay = SETTLE_RETRY_MIN_MS;
        await this.sleep(this.pollMs);
      }
    }
  }

  private notePending(first: string | null): void {
    if (first === null) this.firstPending = undefined;
    else if (this.firstPending?.key !== first) this.firstPending = { key: first, since: Date.now() };
  }

  /**
   * How long the same committed change has waited to settle (0 when nothing waits). Under
   * steady traffic rows settle within milliseconds and the first waiting row keeps changing;
   * one row staying first means a transaction somewhere holds back the settled horizon.
   */
  get settleLagMs(): number {
    return this.firstPending ? Date.now() - this.firstPending.since : 0;
  }

  private async fence(): Promise<void> {
    try {
      if (await fenceFeed(this.sql)) this.logger.warn({ from: this.epoch }, 'feed epoch renewed: the database history changed (failover or restore)');
    } catch (err) {
      this.logger.error({ err }, 'feed fence failed');
      await this.sleep(this.pollMs * 10);
    }
  }

  /** The database was restored or its epoch rotated: every cursor is void, streams must end. */
  private async resetEpoch(epoch: string): Promise<void> {
    try {
      const head = await changes.settledHead(this.sql);
      this.logger.warn({ from: this.epoch, to: epoch }, 'feed epoch changed');
      this.epoch = epoch;
      this.buffer.reset(head);
      for (const region of [...this.waiters.keys()]) this.wake(region, 'reset');
    } catch (err) {
      this.logger.error({ err }, 'feed epoch reset failed');
      await this.sleep(this.pollMs * 10);
    }
  }

  private wake(region: string, reason: WakeReason): void {
    const set = this.waiters.get(region);
    if (!set) return;
    this.waiters.delete(region);
    for (const w of set) w.finish(reason);
  }

  /** New rows of `region` are in the buffer: pushed to its waiting streams (fanout.ts), after
   *  any push of the region still in progress, so each stream gets them in order. */
  private deliver(region: string): void {
    if (!this.waiters.get(region)?.size) return;
    const prev = this.pushing.get(region) ?? Promise.resolve();
    const next = prev.then(() => {
      const set = this.waiters.get(region);
      if (!set?.size) return;
      return pushToWaiters(this.buffer, region, [...set], (entries) => this.resolveLines(region, entries));
    });
    this.pushing.set(region, next);
    void next
      .catch((err: unknown) => this.logger.error({ err, region }, 'feed push failed'))
      .finally(() => {
        if (this.pushing.get(region) === next) this.pushing.delete(region);
      });
  }

  /**
   * Resolves when a change for `region` lands in the buffer, after `timeoutMs`, on an epoch
   * reset, on close, or when `signal` aborts. Register synchronously after reading the buffer
   * (no await between), or a change appended in between would be missed until the next one.
   * With a push target, new changes are written to it while it waits (fanout.ts) and the wait
   * goes on; it ends with 'drain' when a push filled the socket, or 'change' when the stream
   * must read them itself. The target's position is the stream's afterwards, whatever the end.
   */
  wait(region: string, timeoutMs: number, signal?: AbortSignal, target?: PushTarget): Promise<WakeReason> {
    if (this.closed) return Promise.resolve('closed');
    if (signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      let set = this.waiters.get(region);
      if (!set) this.waiters.set(region, (set = new Set()));
      const waiter: Waiter = {
        target,
        finished: false,
        finish: (r: WakeReason) => {
          if (waiter.finished) return;
          (waiter as { finished: boolean }).finished = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          this.waiters.get(region)?.delete(waiter);
          resolve(r);
        },
      };
      const onAbort = () => waiter.finish('aborted');
      const timer = setTimeout(() => waiter.finish('timeout'), Math.max(0, timeoutMs));
      signal?.addEventListener('abort', onAbort, { once: true });
      set.add(waiter);
    });
  }

  /**
   * The serialized `change` line of each entry, built once and shared by every stream of the
   * region: with a thousand agents on one region, serializing per stream would dominate.
   */
  resolveLines(region: string, entries: BufferedChange[]): Promise<string[]> {
    const states = this.resolveStates(region, entries);
    return Promise.all(
      entries.map((e, i) => {
        if (!e.line) {
          const buffer = this.buffer;
          const p: Promise<string> = states.then((all) => {
            const line = JSON.stringify({
              type: 'change',
              cursor: encodeCursor(this.epoch, e),
              resource: { type: e.resourceType, id: e.resourceId, region: e.region },
              state: all[i],
              ...(e.traceparent ? { traceparent: e.traceparent } : {}),
            });
            buffer.account(e, line.length * BYTES_PER_LINE_BYTE);
            return line;
          });
          p.catch(() => {
            if (e.line === p) delete e.line;
          });
          e.line = p;
        }
        return e.line;
      }),
    );
  }

  /** Desired states of buffered entries of one region, loading the missing ones in one batch. */
  resolveStates(region: string, entries: BufferedChange[]): Promise<DesiredState[]> {
    const missing = entries.filter((e) => !e.state);
    if (missing.length) {
      const loaded = loadDesiredRows(
        this.sql,
        region,
        missing.map((e) => ({ type: e.resourceType, id: e.resourceId })),
      ).then(stateMap);
      for (const e of missing) {
        const p: Promise<DesiredState> = loaded.then((m) => stateFor(m, e.resourceType, e.resourceId));
        // A failed load must not poison the entry for later readers: forget it so they retry.
        p.catch(() => {
          if (e.state === p) delete e.state;
        });
        e.state = p;
      }
    }
    return Promise.all(entries.map((e) => e.state!));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ring?.();
    for (const region of [...this.waiters.keys()]) this.wake(region, 'closed');
    await this.loopDone?.catch(() => {});
    await this.unlisten?.().catch(() => {});
  }
}
