// One long-poll response of GET /v1/cluster/changes. Without a cursor it first sends the
// region's full snapshot; then it sends incremental changes from the tailer's buffer (or from
// the table while its cursor is older than the buffer), heartbeats while idle, and an `end`
// line with its cursor at the wait limit or on shutdown. An agent that asked for a handover
// gets a `handover` line at the wait limit instead, and the stream goes on sending changes
// while the agent opens its next poll, until the agent closes it or the grace passes (then
// `end`): a change committed during the reconnect does not wait for it. Events are
// level-triggered: within a batch, several changes of one resource collapse into one event
// carrying the latest position and the current state.
import type { Logger } from '../log';
import * as changes from '../store/changes';
import { loadDesiredRows } from '../store/desired-state';
import { readSnapshot, type SnapshotSource } from './snapshot-source';
import type { Position, FeedRow } from '../store/changes';
import { comparePositions, encodeCursor, maxPosition } from './cursor';
import { stateFor, stateMap, statesOf } from './desired';
import { coalesce, type BufferedChange } from './buffer';
import type { DesiredState, StreamLine } from './wire';
import type { PushTarget, Tailer } from './tailer';
import type { Closing } from './closing';
import { StacklessError } from './stackless';

/** Rows per snapshot fetch and per table catch-up page: one JSON write of a few hundred KB. */
const PAGE = 1_000;

export interface LineSink {
  /** Writes lines; resolves once the socket can take more (backpressure). */
  write(lines: StreamLine[]): Promise<void>;
  /** Writes lines already serialized (one JSON object each, no newline). */
  writeSerialized(lines: string[]): Promise<void>;
  /** Writes a chunk of serialized lines (newline-terminated, UTF-8) now, for the tailer's
   *  push; false when the socket must drain first (or is closed). */
  push(chunk: Uint8Array): boolean;
  /** Resolves once the socket can take more (at once when it can). */
  drained(): Promise<void>;
  readonly closed: boolean;
}

export interface StreamDeps {
  tailer: Tailer;
  logger: Logger;
  heartbeatMs: number;
  retentionTtlMs: number;
  /**
   * Longest a write may wait for the client to take it. A client that stops reading is cut
   * after this: during a full sync it would otherwise hold a REPEATABLE READ transaction and a
   * snapshot slot for as long as its socket stays half-alive.
   */
  writeStallMs: number;
  /**
   * Longest a whole full sync may take, from snapshot_begin to snapshot_end. The stall limit
   * bounds each write; this bounds their sum, so a client reading just fast enough never to
   * stall still hands back its snapshot slot and transaction in bounded time.
   */
  snapshotDeadlineMs: number;
  /** Set when ctrl shuts down: streams end with their cursor at the next opportunity. */
  closing: Closing;
  /** Where full syncs read: a fresh enough hot standby, else the primary (snapshot-source.ts). */
  snapshots: SnapshotSource;
}

export interface StreamRequest {
  region: string;
  /** Absent: full sync first. */
  from?: { epoch: string; position: Position };
  /** Release of the snapshot slot a full sync was granted; called once the snapshot is sent. */
  releaseSnapshotSlot?: () => void;
  waitMs: number;
  /** Set when the agent takes a `handover` line: how long the stream goes on after it. */
  handoverGraceMs?: number;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/**
 * Thrown inside a stream when it must stop without an `end` line (the agent treats it as cut).
 * One is made per poll an agent closes; its message is logged as `why` (stackless.ts).
 */
export class StreamAborted extends StacklessError {}

/** Why a stream's wait is cut (client gone, ctrl closing): never thrown, so one serves all
 *  (AbortController's default, a DOMException with a stack, was made once per poll). */
const WAIT_CUT = new StreamAborted('stream stopped');

function changeLines(epoch: string, region: string, rows: FeedRow[], states: DesiredState[]): StreamLine[] {
  return rows.map((r, i) => ({
    type: 'change',
    cursor: encodeCursor(epoch, r),
    resource: { type: r.resourceType, id: r.resourceId, region },
    state: states[i]!,
    ...(r.traceparent ? { traceparent: r.traceparent } : {}),
  }));
}

/**
 * Runs one response to completion. Returns normally after writing `end`; throws StreamAborted
 * (or a database error) when the response must be cut instead, so the agent keeps its cursor.
 *
 * Over 80 lines: snapshot, buffered pages, waits, the fan-out's hand-over, heartbeats and the
 * end all move one cursor and write to one sink; split, each piece would pass both back.
 */
export async function runStream(deps: StreamDeps, req: StreamRequest, out: LineSink): Promise<void> {
  const { tailer } = deps;
  let deadline = Date.now() + req.waitMs;
  let handedOver = false;
  const stopped = () => out.closed || req.signal.aborted || deps.closing.aborted;
  let lastWrite = Date.now();
  const write = async (lines: StreamLine[]) => {
    if (!lines.length) return;
    await withinStall(out.write(lines), deps.writeStallMs);
    lastWrite = Date.now();
  };

  let epoch: string;
  let pos: Position;
  if (!req.from) {
    const snapshotEnds = Date.now() + deps.snapshotDeadlineMs;
    // Every write of the snapshot waits at most until the deadline, and a page starts only before it.
    const snapshotWrite = async (lines: StreamLine[]) => {
      const left = snapshotEnds - Date.now();
      if (left <= 0) throw new StreamAborted('full sync past its deadline');
      await withinStall(out.write(lines), Math.min(deps.writeStallMs, left));
      lastWrite = Date.now();
    };
    try {
      if (stopped()) throw new StreamAborted('stopped before snapshot');
      await snapshotWrite([{ type: 'snapshot_begin' }]);
      const snap = await readSnapshot(deps.snapshots, req.region, tailer.epoch, PAGE, async (batch) => {
        if (stopped()) throw new StreamAborted('stopped during snapshot');
        await snapshotWrite(statesOf(batch).map((s) => ({ type: 'change', resource: s.resource, state: s.state })));
      });
      epoch = snap.epoch;
      pos = snap.head;
      await snapshotWrite([{ type: 'snapshot_end', cursor: encodeCursor(epoch, pos), count: snap.count }]);
    } finally {
      req.releaseSnapshotSlot?.();
    }
  } else {
    epoch = req.from.epoch;
    pos = req.from.position;
  }

  // Combined abort for waits: client gone or ctrl closing.
  const waitAbort = new AbortController();
  const onAbort = () => waitAbort.abort(WAIT_CUT);
  req.signal.addEventListener('abort', onAbort, { once: true });
  const offClosing = deps.closing.subscribe(onAbort);
  // Lent to the tailer while waiting: it pushes new changes straight into the socket.
  const target: PushTarget = { pos, lastWrite, push: (chunk) => out.push(chunk) };
  try {
    while (!stopped() && tailer.epoch === epoch) {
      const now = Date.now();
      if (now >= deadline) {
        if (req.handoverGraceMs === undefined || handedOver) break;
        // The agent reconnects from here while this stream goes on: it closes this one once
        // its next poll is answered, and the grace ends it for an agent that does not.
        await write([{ type: 'handover', cursor: encodeCursor(epoch, pos) }]);
        handedOver = true;
        deadline = Date.now() + req.handoverGraceMs;
        continue;
      }
      if (comparePositions(pos, tailer.buffer.floor) < 0) {
        pos = await catchUpFromTable(deps, req.region, epoch, pos, write);
        continue;
      }
      const { entries, upTo } = tailer.buffer.since(req.region, pos, PAGE);
      if (entries.length === 0) {
        pos = maxPosition(pos, upTo);
        const untilHeartbeat = lastWrite + deps.heartbeatMs - now;
        if (untilHeartbeat <= 0) {
          await write([{ type: 'heartbeat' }]);
          continue;
        }
        target.pos = pos;
        target.lastWrite = lastWrite;
        const r = await tailer.wait(req.region, Math.min(untilHeartbeat, deadline - now), waitAbort.signal, target);
        pos = target.pos;
        lastWrite = target.lastWrite;
        if (r === 'reset' || r === 'closed') break;
        // A push filled the socket: the client takes it within the stall limit or is cut.
        if (r === 'drain') await withinStall(out.drained(), deps.writeStallMs);
        continue;
      }
      const rows = coalesce<BufferedChange>(entries);
      const lines = await tailer.resolveLines(req.region, rows);
      if (tailer.epoch !== epoch) break;
      await withinStall(out.writeSerialized(lines), deps.writeStallMs);
      lastWrite = Date.now();
      pos = maxPosition(pos, upTo);
    }
  } finally {
    req.signal.removeEventListener('abort', onAbort);
    offClosing();
  }
  if (out.closed || req.signal.aborted) throw new StreamAborted('client went away');
  // After an epoch change the old-epoch cursor makes the agent's next request a 410.
  await out.write([{ type: 'end', cursor: encodeCursor(epoch, pos) }]);
}

/** Waits for a write, but cuts the stream when the client takes longer than `ms` to accept it. */
async function withinStall(p: Promise<void>, ms: number): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new StreamAborted('client stopped reading')), ms);
  });
  try {
    await Promise.race([p, stalled]);
  } finally {
    clearTimeout(t);
  }
}

/** One page of table reads for a cursor older than the buffer; returns the new position. */
async function catchUpFromTable(
  deps: StreamDeps,
  region: string,
  epoch: string,
  pos: Position,
  write: (lines: StreamLine[]) => Promise<void>,
): Promise<Position> {
  const { tailer } = deps;
  const floor = tailer.buffer.floor;
  // Retention is judged in the same snapshot as the read: cleanup committing in between
  // would otherwise delete rows this page skips without noticing.
  const { behind, rows } = await changes.readRegionRetained(tailer.sql, region, pos, floor, PAGE, deps.retentionTtlMs);
  if (behind) {
    // Cleanup overtook this stream; cutting it makes the agent reconnect and get a 410.
    throw new StreamAborted('cursor fell behind retention while catching up');
  }
  if (rows.length) {
    const batch = coalesce(rows);
    const m = stateMap(await loadDesiredRows(tailer.sql, region, batch.map((r) => ({ type: r.resourceType, id: r.resourceId }))));
    await write(changeLines(epoch, region, batch, batch.map((r) => stateFor(m, r.resourceType, r.resourceId))));
  }
  if (rows.length === PAGE) {
    const last = rows[rows.length - 1]!;
    return { txid: last.txid, id: last.id };
  }
  return floor;
}
