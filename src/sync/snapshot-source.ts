// Where a full sync reads its snapshot: a hot standby (ctrl's --database-read-url) when it is
// fresh enough, else the primary. A full sync is the feed's heaviest read (a region's every
// resource in one REPEATABLE READ transaction), which is why it may leave the primary.
//
// The rule (DESIGN section 13): an agent never receives a snapshot older than a cursor it was
// already given. A full sync carries no cursor, but every cursor handed out before this
// request, by any replica, was settled before it: so the primary's settled head read now is at
// or past all of them. The standby's snapshot is used only when, read in that very snapshot,
// its head is at or past that position and its epoch is the feed's (the same history: a
// standby still on a dead primary's timeline has the old epoch). Otherwise it is tried again
// as the standby replays, up to a bound, and then the primary reads it. Nothing is streamed
// from a snapshot before it is accepted, so a refused or failed standby costs the agent nothing
// but the wait.
import type { Logger } from '../log';
import type { Sql } from '../store/db';
import { settledHead, type Position } from '../store/changes';
import { readRegionSnapshot, readRegionSnapshotIf, type DesiredRows, type SnapshotResult } from '../store/desired-state';
import { comparePositions } from './cursor';

export interface SnapshotSource {
  /** The primary's pool (the tailer's). */
  primary: Sql;
  /** The standby's pool, when ctrl was given --database-read-url. */
  standby?: Sql;
  /** Longest a full sync waits for the standby to replay far enough before reading the primary. */
  maxLagMs: number;
  logger: Logger;
  /** Counted reads, for metrics and benchmarks. */
  stats: SnapshotReadStats;
}

export interface SnapshotReadStats {
  standby: number;
  primary: number;
  /** Full syncs that wanted the standby and read the primary (it lagged past maxLagMs, was of
   *  another epoch, or failed before its first row). */
  fallbacks: number;
  /** Milliseconds full syncs spent before a standby snapshot was accepted or given up, summed. */
  waitedMs: number;
}

export const newSnapshotReadStats = (): SnapshotReadStats => ({ standby: 0, primary: 0, fallbacks: 0, waitedMs: 0 });

/**
 * Replication lag a full sync waits out on the standby before it reads the primary: streaming
 * replication on one network replays within milliseconds, and a second covers a checkpoint's
 * burst; a standby further behind is behind for a reason, and the primary answers now.
 */
export const DEFAULT_READ_LAG_MAX_MS = 1_000;
/** First pause between tries on a lagging standby; doubles up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 5;
const RETRY_MAX_MS = 100;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads a region's snapshot from the standby when it is fresh enough, else from the primary. */
export async function readSnapshot(
  src: SnapshotSource,
  region: string,
  epoch: string,
  batchSize: number,
  onBatch: (batch: DesiredRows) => Promise<void>,
): Promise<SnapshotResult> {
  if (src.standby) {
    const snap = await fromStandby(src, src.standby, region, epoch, batchSize, onBatch);
    if (snap) {
      src.stats.standby++;
      return snap;
    }
    src.stats.fallbacks++;
  }
  src.stats.primary++;
  return readRegionSnapshot(src.primary, region, batchSize, onBatch);
}

async function fromStandby(
  src: SnapshotSource,
  standby: Sql,
  region: string,
  epoch: string,
  batchSize: number,
  onBatch: (batch: DesiredRows) => Promise<void>,
): Promise<SnapshotResult | undefined> {
  const start = Date.now();
  let need: Position;
  try {
    need = await settledHead(src.primary);
  } catch {
    // The primary is away: so is the feed's epoch check; the stream fails on the primary read.
    return undefined;
  }
  let seen: { epoch: string; head: Position } | undefined;
  let acceptedAt: number | undefined;
  let started = false;
  const onRows = (b: DesiredRows) => ((started = true), onBatch(b));
  try {
    for (let delay = RETRY_MIN_MS; ; delay = Math.min(delay * 2, RETRY_MAX_MS)) {
      const snap = await readRegionSnapshotIf(standby, region, batchSize, onRows, (h) => {
        seen = h;
        const ok = h.epoch === epoch && comparePositions(h.head, need) >= 0;
        if (ok) acceptedAt = Date.now();
        return ok;
      });
      if (snap) return snap;
      if (Date.now() - start + delay > src.maxLagMs) break;
      await sleep(delay);
    }
    src.logger.debug({ region, need, seen }, 'standby behind or of another epoch: full sync reads the primary');
    return undefined;
  } catch (err) {
    // Rows already went out: the stream is cut and the agent starts over.
    if (started) throw err;
    src.logger.warn({ err, region }, 'standby read failed: full sync reads the primary');
    return undefined;
  } finally {
    src.stats.waitedMs += (acceptedAt ?? Date.now()) - start;
  }
}
