// krane's side of a feed handover (watcher.ts): the polls that sent a `handover` line and are
// still read while the next poll is being opened ("drains"), and the events they dispatched.
// Without them a change committed while the agent reconnects waits for the reconnect; with
// them it is applied as soon as it arrives on the old poll. The rules, and why:
// - A drain dispatches its changes but commits no cursor. The handover's cursor was committed
//   (every event before it handled) and the next poll starts there, so it sends each of those
//   changes again, in order, and its own cursor rules commit them: the committed cursor only
//   moves forward and only past handled events, whichever poll brought them first.
// - Drains stop dispatching, and their polls are closed, the moment the next poll is answered,
//   before its first line is read. Every later event comes in the next poll's order, so the
//   last state submitted for a resource is always the newest (the dispatcher keeps the last).
// - The next poll's copy of a change a drain dispatched (the same cursor: the same outbox row)
//   is not applied again: it waits for the drain's job, or is submitted anew if that failed,
//   before the poll's next line is read, so the copy keeps its place in the poll's order.
// - A GC (end of a full sync) waits for every drained job: an apply landing after it would
//   bring back an object the snapshot no longer lists.
import type { Logger } from '../log';
import { StacklessError } from './stackless';

/** A poll after its `handover` line. */
export interface Drain {
  readonly ac: AbortController;
  stopped: boolean;
}

/**
 * Jobs remembered for the next poll to find by cursor. A drain lasts about one reconnect, so a
 * handful is usual; past this many (a flood during a slow reconnect) the copies are applied
 * twice, which level-triggered events make harmless.
 */
const MAX_REMEMBERED = 10_000;

/** Why a drain's poll is closed: the next poll was answered, not a failure (stackless.ts:
 *  Node's destroy of the request reads the reason's stack, once per handed-over poll). */
export class DrainClosed extends StacklessError {
  constructor() {
    super('the next poll was answered');
    this.name = 'DrainClosed';
  }
}

export class Overlap {
  private readonly drains = new Set<Drain>();
  private readonly byCursor = new Map<string, Promise<void>>();
  private readonly jobs = new Set<Promise<void>>();
  private readonly sessions = new Set<Promise<unknown>>();

  constructor(private readonly logger: Logger) {}

  /** A poll handed over: from now on it is read as a drain. */
  begin(ac: AbortController): Drain {
    // The previous round's leftovers (copies the next poll coalesced away) are of no more use.
    if (this.drains.size === 0) this.byCursor.clear();
    const d: Drain = { ac, stopped: false };
    this.drains.add(d);
    return d;
  }

  /** The drain's poll has ended, however. */
  finish(d: Drain): void {
    this.drains.delete(d);
  }

  /**
   * Runs one poll until it ends or hands over (it calls `handedOver`): then it resolves
   * 'handover' and the rest of the poll is read beside the next one.
   */
  run<T>(poll: (handedOver: () => void) => Promise<T>): Promise<T | 'handover'> {
    let handedOver!: () => void;
    const handover = new Promise<'handover'>((resolve) => {
      handedOver = () => resolve('handover');
    });
    const session = poll(handedOver);
    return Promise.race([session, handover]).then((outcome) => {
      if (outcome === 'handover') this.track(session);
      return outcome;
    });
  }

  /** Keeps a drain's reading until it ends, so stop() can wait for it; its errors are not failures. */
  private track(session: Promise<unknown>): void {
    const p = session.catch((err: unknown) => this.logger.debug({ err }, 'feed poll failed after its handover'));
    this.sessions.add(p);
    void p.finally(() => this.sessions.delete(p));
  }

  /**
   * Dispatches a drained change unless the next poll has been answered meanwhile (checked here,
   * after the caller's last await, so nothing is submitted after that poll's first event);
   * true when it did.
   */
  dispatch(d: Drain, cursor: string, submit: () => Promise<void>): boolean {
    if (d.stopped) return false;
    const job = submit();
    // Its failure is the next poll's to see: that poll submits the change again.
    job.catch(() => {});
    if (this.byCursor.size < MAX_REMEMBERED) this.byCursor.set(cursor, job);
    this.jobs.add(job);
    void job.catch(() => {}).finally(() => this.jobs.delete(job));
    return true;
  }

  /** The job of a change a drain dispatched, for the next poll's copy of it (taken once). */
  take(cursor: string): Promise<void> | undefined {
    if (this.byCursor.size === 0) return undefined;
    const job = this.byCursor.get(cursor);
    if (job) this.byCursor.delete(cursor);
    return job;
  }

  /** The next poll was answered (or the watcher stops): every drain stops and is closed. */
  end(): void {
    for (const d of this.drains) {
      d.stopped = true;
      d.ac.abort(new DrainClosed());
    }
  }

  /** Every drained job done, failed ones included. */
  async settled(): Promise<void> {
    while (this.jobs.size) await Promise.allSettled([...this.jobs]);
  }

  /** Every drain's reading ended. */
  async idle(): Promise<void> {
    while (this.sessions.size) await Promise.allSettled([...this.sessions]);
  }
}
