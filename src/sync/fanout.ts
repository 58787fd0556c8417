// Fan-out: new changes pushed by the tailer straight into the sockets of the streams waiting on
// their region, instead of waking each stream to read the buffer itself. With a thousand agents
// on one region, waking a thousand streams per change cost a thousand rounds of promises,
// timers, abort listeners, buffer reads and coalescing, for a thousand identical lines: the
// push computes what each group of waiters would have sent (the same since(), coalescing and
// shared serialized lines as the stream's own read) once per group, and writes the one chunk
// to every socket of the group in a synchronous loop. Per (change, socket) what remains is the
// write itself.
//
// A waiter the push cannot serve (its socket needs to drain, or the lines failed to load) is
// woken instead and its stream reads the buffer itself, as before: the push is a shortcut of
// the stream's own loop, never a different answer. A waiter woken for any other reason
// (heartbeat due, its wait over, the client gone) before a push reached it takes its position
// as it is and reads the rest itself.
import type { Position } from '../store/changes';
import { coalesce, type BufferedChange, type ChangeBuffer } from './buffer';
import { comparePositions, maxPosition } from './cursor';

export type WakeReason = 'change' | 'timeout' | 'reset' | 'closed' | 'aborted' | 'drain';

/** What a waiting stream lends the tailer: where it is, and its socket. */
export interface PushTarget {
  /** The position the stream has sent up to; advanced by every push. */
  pos: Position;
  /** When it last wrote (a push counts), for its heartbeat. */
  lastWrite: number;
  /** Writes a chunk of serialized lines (UTF-8) now; false when the socket must drain first. */
  push(chunk: Uint8Array): boolean;
}

/** A stream waiting on a region; a push target when it lent one. */
export interface Waiter {
  target?: PushTarget;
  /** Settles the wait (once); later calls do nothing. */
  finish(reason: WakeReason): void;
  readonly finished: boolean;
}

interface Group {
  entries: BufferedChange[];
  upTo: Position;
  members: Waiter[];
}

/** Rows per push: the stream's own page size, so a push never sends more than a read would. */
const PAGE = 1_000;

/**
 * Serves a region's waiters after new rows were appended: pushes to the ones with a target,
 * wakes the others. `lines` builds (and shares) the serialized lines of buffered entries.
 * A burst longer than a page (one transaction can change thousands of a region's rows) is
 * pushed page by page until the waiters are at the head, as the stream's own loop reads it:
 * left at the end of the first page, the rest would wait for the region's next change or
 * the wait's timer (up to a heartbeat).
 */
export async function pushToWaiters(
  buffer: ChangeBuffer,
  region: string,
  waiters: readonly Waiter[],
  lines: (entries: BufferedChange[]) => Promise<string[]>,
): Promise<void> {
  // Each round moves every waiter it serves forward by up to a page, so this ends.
  for (let left = waiters; left.length > 0; ) left = await pushPage(buffer, region, left, lines);
}

/** One page to each waiter; returns the waiters still waiting whose page was cut short. */
async function pushPage(
  buffer: ChangeBuffer,
  region: string,
  waiters: readonly Waiter[],
  lines: (entries: BufferedChange[]) => Promise<string[]>,
): Promise<Waiter[]> {
  const more: Waiter[] = [];
  // Waiters that would be sent the same entries get the same chunk: one group each (usually
  // one in all).
  const groups = new Map<string, Group>();
  // A push moves every member of a group to one shared position object, so a thousand waiters
  // usually hold a handful of positions: the buffer is searched once per position, not once per
  // waiter. Keyed by identity: equal positions held in distinct objects are each searched.
  const byPos = new Map<Position, { group?: Group; upTo: Position }>();
  for (const w of waiters) {
    if (w.finished) continue;
    const t = w.target;
    if (!t || comparePositions(t.pos, buffer.floor) < 0) {
      w.finish('change');
      continue;
    }
    let found = byPos.get(t.pos);
    if (!found) {
      const { entries, upTo } = buffer.since(region, t.pos, PAGE);
      let group: Group | undefined;
      if (entries.length > 0) {
        const key = `${entries[0]!.txid}:${entries[0]!.id}:${entries.length}`;
        group = groups.get(key);
        if (!group) groups.set(key, (group = { entries, upTo, members: [] }));
      }
      byPos.set(t.pos, (found = { group, upTo }));
    }
    if (found.group) found.group.members.push(w);
    else t.pos = maxPosition(t.pos, found.upTo);
  }
  for (const g of groups.values()) {
    // Encoded once for the group: a string would be measured and encoded again for every
    // socket it is written to (Buffer.byteLength for the chunk size, then the UTF-8 copy).
    let chunk: Uint8Array;
    try {
      chunk = Buffer.from((await lines(coalesce(g.entries))).join('\n') + '\n', 'utf8');
    } catch {
      // The stream's own read retries the load (and fails the stream if it must).
      for (const w of g.members) w.finish('change');
      continue;
    }
    const now = Date.now();
    const cutShort = comparePositions(g.upTo, buffer.head) < 0;
    for (const w of g.members) {
      // Woken meanwhile (its wait ended, the client left): it reads from where it is.
      if (w.finished) continue;
      const t = w.target!;
      const ok = t.push(chunk);
      t.pos = maxPosition(t.pos, g.upTo);
      t.lastWrite = now;
      if (!ok) w.finish('drain');
      // Cut short at a page: the next round sends on from here.
      else if (cutShort) more.push(w);
    }
  }
  return more;
}
