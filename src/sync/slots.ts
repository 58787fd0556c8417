// Snapshot slots: a few full syncs stream at once (each holds a pooled connection and a
// REPEATABLE READ transaction); the rest wait in a queue that is bounded per key (region) and
// served round-robin between keys, so one region reconnecting all its agents at once cannot
// hold back another region's full sync, nor grow the queue without limit.
import { AppError } from '../errors';

interface Waiter {
  grant(): void;
  fail(err: Error): void;
}

export class FairSlots {
  /** Keys with waiters, in the order they are served next (Map keeps insertion order). */
  private readonly queues = new Map<string, Waiter[]>();

  constructor(
    private free: number,
    private readonly maxQueuedPerKey: number,
    private readonly maxWaitMs: number,
  ) {}

  get queued(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /**
   * Resolves with the release function of a slot. Throws ERR_FEED_SYNC_BUSY (503, retryable)
   * at once when `key` already has its full share of waiters, or after waiting maxWaitMs;
   * rejects with `signal`'s reason when the caller goes away while waiting.
   */
  acquire(key: string, signal?: AbortSignal): Promise<() => void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(this.releaser());
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
          resolve(this.releaser());
        },
        fail: (err) => {
          leave();
          reject(err);
        },
      };
      const onAbort = () => w.fail(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
      const timer = setTimeout(() => w.fail(busy('no snapshot slot became free in time')), this.maxWaitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      q.push(w);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.handOver();
    };
  }

  /** Gives a freed slot to the first waiter of the next key in turn; that key goes to the back. */
  private handOver(): void {
    const next = this.queues.entries().next();
    if (next.done) {
      this.free++;
      return;
    }
    const [key, q] = next.value;
    this.queues.delete(key);
    if (q.length > 1) this.queues.set(key, q);
    // grant() removes the waiter (and the key, if it was the last one).
    q[0]!.grant();
  }
}

const busy = (why: string) => new AppError('ERR_FEED_SYNC_BUSY', `full sync refused for now: ${why}; try again later`);
