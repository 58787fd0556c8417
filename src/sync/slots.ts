// Snapshot slots: a few full syncs stream at once (each holds a pooled connection and a
// REPEATABLE READ transaction); the rest wait in a queue that is bounded per key (region) and
// served round-robin between keys, so one region reconnecting all its agents at once cannot
// hold back another region's full sync, nor grow the queue without limit.
//
// Fair shares: one key holds at most half the slots (rounded up) even when alone, so a region
// that opens every stream its token allows still leaves room for the next region to start at
// once; a region's second concurrent full sync is redundant anyway (one leader applies it).
// While other keys wait, a key's share shrinks to total / (keys holding or waiting), and a freed
// slot goes first to a waiting key below its share, in turn.
import { AppError } from '../errors';

interface Waiter {
  grant(): void;
  fail(err: Error): void;
}

export class FairSlots {
  /** Keys with waiters, in the order they are served next (Map keeps insertion order). */
  private readonly queues = new Map<string, Waiter[]>();
  /** Slots held per key. */
  private readonly held = new Map<string, number>();
  private free: number;

  constructor(
    private readonly total: number,
    private readonly maxQueuedPerKey: number,
    private readonly maxWaitMs: number,
  ) {
    this.free = total;
  }

  get queued(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /** Slots held by `key` now (for tests and metrics). */
  holding(key: string): number {
    return this.held.get(key) ?? 0;
  }

  /** Most a key may hold at all: half the slots, rounded up. */
  private get cap(): number {
    return Math.max(1, Math.ceil(this.total / 2));
  }

  /**
   * A key's fair share while others wait: the slots divided among every key holding or waiting.
   * Counted without building the set of keys: with 10,000 regions waiting for their first full
   * sync, a set per call (and a call per waiting key in handOver) was quadratic. Held keys are
   * at most `total`, so this is constant time.
   */
  private share(key: string): number {
    let keys = this.queues.size;
    for (const k of this.held.keys()) if (!this.queues.has(k)) keys++;
    if (!this.queues.has(key) && !this.held.has(key)) keys++;
    return Math.max(1, Math.min(this.cap, Math.floor(this.total / keys)));
  }

  private othersWaiting(key: string): boolean {
    for (const k of this.queues.keys()) if (k !== key) return true;
    return false;
  }

  /**
   * Resolves with the release function of a slot. Throws ERR_FEED_SYNC_BUSY (503, retryable)
   * at once when `key` already has its full share of waiters, or after waiting maxWaitMs;
   * rejects with `signal`'s reason when the caller goes away while waiting.
   */
  acquire(key: string, signal?: AbortSignal): Promise<() => void> {
    const mine = this.holding(key);
    if (this.free > 0 && !this.queues.has(key) && mine < (this.othersWaiting(key) ? this.share(key) : this.cap)) {
      return Promise.resolve(this.take(key));
    }
    const q = this.queues.get(key) ?? [];
    if (q.length >= this.maxQueuedPerKey) return Promise.reject(busy(`${q.length} full syncs of this region are already waiting`));
    if (!this.queues.has(key)) this.queues.set(key, q);
    return new Promise((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = q.indexOf(w);
        if (i >= 0) q.splice(i, 1);
        if (q.length === 0 && this.queues.get(key) === q) this.queues.delete(key);
      };
      const w: Waiter = {
        grant: () => {
          leave();
          resolve(this.take(key));
        },
        fail: (err) => {
          leave();
          reject(err);
          // A leaving waiter may have been what kept a free slot from another key.
          this.handOver();
        },
      };
      const onAbort = () => w.fail(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
      const timer = setTimeout(() => w.fail(busy('no snapshot slot became free in time')), this.maxWaitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      q.push(w);
    });
  }

  private take(key: string): () => void {
    this.free--;
    this.held.set(key, this.holding(key) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = this.holding(key) - 1;
      if (n > 0) this.held.set(key, n);
      else this.held.delete(key);
      this.free++;
      this.handOver();
    };
  }

  /**
   * Gives free slots to waiters: first to keys below their share, in turn, then to keys below
   * the cap; a served key goes to the back of the turn.
   */
  private handOver(): void {
    while (this.free > 0) {
      const next = this.pick((k) => this.holding(k) < this.share(k)) ?? this.pick((k) => this.holding(k) < this.cap);
      if (!next) return;
      const q = this.queues.get(next)!;
      this.queues.delete(next);
      if (q.length > 1) this.queues.set(next, q);
      // grant() removes the waiter (and the key, if it was the last one).
      q[0]!.grant();
    }
  }

  private pick(eligible: (key: string) => boolean): string | undefined {
    for (const k of this.queues.keys()) if (eligible(k)) return k;
    return undefined;
  }
}

const busy = (why: string) => new AppError('ERR_FEED_SYNC_BUSY', `full sync refused for now: ${why}; try again later`);
