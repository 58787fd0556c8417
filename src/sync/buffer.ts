// The tailer's bounded in-memory window of settled changes, indexed per region. It covers the
// positions (floor, head]: every settled row in that range is in it, in (txid, id) order. A
// stream whose cursor is at or after the floor is served from here; an older cursor is served
// from the table until it reaches the floor.
import type { FeedRow, Position } from '../store/changes';
import { refKey, type DesiredState } from './wire';
import { comparePositions } from './cursor';

/** Several changes of one resource collapse into the last (events are level-triggered). */
export function coalesce<T extends FeedRow>(rows: T[]): T[] {
  if (rows.length === 1) return rows;
  const last = new Map<string, number>();
  rows.forEach((r, i) => last.set(refKey({ type: r.resourceType, id: r.resourceId }), i));
  return rows.filter((r, i) => last.get(refKey({ type: r.resourceType, id: r.resourceId })) === i);
}

export interface BufferedChange extends FeedRow {
  /**
   * Current desired state, loaded at most once per entry and shared by every stream that sends
   * it: a thousand agents of one region cost one lookup, not a thousand. Loaded after the row
   * settled, so it is at least as new as the change; later changes have later entries.
   */
  state?: Promise<DesiredState>;
  /** The entry's serialized `change` line (epoch-bound: the buffer is reset on an epoch change). */
  line?: Promise<string>;
  /** Bytes counted against the buffer's budget for this entry (0 until its line is built). */
  bytes?: number;
  /** Set once the entry left the buffer, so a late line is not counted against it. */
  evicted?: boolean;
}

/** Array with a moving start, so evicting from the front is O(1) amortised. */
class Window<T> {
  items: T[] = [];
  start = 0;
  get length() {
    return this.items.length - this.start;
  }
  push(x: T) {
    this.items.push(x);
  }
  shift(): T | undefined {
    if (this.start >= this.items.length) return undefined;
    const x = this.items[this.start++];
    // Compact once the dead prefix dominates, keeping memory proportional to the live part.
    if (this.start > 1024 && this.start * 2 > this.items.length) {
      this.items = this.items.slice(this.start);
      this.start = 0;
    }
    return x;
  }
}

export class ChangeBuffer {
  private all = new Window<BufferedChange>();
  private regions = new Map<string, Window<BufferedChange>>();
  floor: Position;
  head: Position;
  /** Bytes counted for the entries held (see account). */
  bytes = 0;

  /**
   * `capacity` bounds entries, `maxBytes` what their states and lines weigh: one deployment
   * with a large env changed often must not grow ctrl's heap by its size times the entries.
   * Entries past either bound leave from the front; streams behind the floor read the table.
   */
  constructor(
    private readonly capacity: number,
    head: Position,
    private readonly maxBytes = Infinity,
  ) {
    this.floor = head;
    this.head = head;
  }

  get size() {
    return this.all.length;
  }

  /** Appends rows read after `head`, in order; returns the regions they touch. */
  append(rows: FeedRow[]): Set<string> {
    const touched = new Set<string>();
    for (const r of rows) {
      const e: BufferedChange = { ...r };
      this.all.push(e);
      let w = this.regions.get(r.region);
      if (!w) this.regions.set(r.region, (w = new Window()));
      w.push(e);
      touched.add(r.region);
    }
    if (rows.length) this.head = { txid: rows[rows.length - 1]!.txid, id: rows[rows.length - 1]!.id };
    this.trim();
    return touched;
  }

  /** Counts an entry's weight once its line is built; entries already gone are not counted. */
  account(e: BufferedChange, bytes: number): void {
    if (e.evicted || e.bytes !== undefined) return;
    e.bytes = bytes;
    this.bytes += bytes;
    this.trim();
  }

  private trim(): void {
    while (this.all.length > this.capacity || (this.bytes > this.maxBytes && this.all.length > 0)) {
      const e = this.all.shift()!;
      const w = this.regions.get(e.region)!;
      w.shift();
      if (w.length === 0) this.regions.delete(e.region);
      e.evicted = true;
      this.bytes -= e.bytes ?? 0;
      this.floor = { txid: e.txid, id: e.id };
    }
  }

  /**
   * Entries of `region` after `after`, and the head they run up to (a stream that sends them
   * all may move its cursor to that head). At most `limit` entries; when cut short, `upTo` is
   * the last entry returned. `after` must not be before the floor.
   */
  since(region: string, after: Position, limit: number): { entries: BufferedChange[]; upTo: Position } {
    const w = this.regions.get(region);
    if (!w) return { entries: [], upTo: this.head };
    const items = w.items;
    let lo = w.start;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (comparePositions(items[mid]!, after) <= 0) lo = mid + 1;
      else hi = mid;
    }
    if (items.length - lo > limit) {
      const entries = items.slice(lo, lo + limit);
      const last = entries[entries.length - 1]!;
      return { entries, upTo: { txid: last.txid, id: last.id } };
    }
    return { entries: items.slice(lo), upTo: this.head };
  }

  /** Forgets everything and restarts the window at `head` (used when the epoch changes). */
  reset(head: Position): void {
    for (let e = this.all.shift(); e; e = this.all.shift()) e.evicted = true;
    this.bytes = 0;
    this.all = new Window();
    this.regions = new Map();
    this.floor = head;
    this.head = head;
  }
}
