// The deployment_changes outbox. `recordChange` is the only insert into the table and is called
// only from the desired-state mutations in topology.ts, sentinels.ts and cilium.ts, inside the
// mutation's own transaction: a state change without its change row cannot be written.
//
// Reads are "settled" reads: a row is returned only when its transaction is older than every
// transaction still running (txid < pg_snapshot_xmin), ordered by (txid, id). A transaction
// gets its xid at its first write and xids are handed out in increasing order, so once a
// position (txid, id) is settled nothing can ever appear before it: a reader that moves its
// cursor past settled rows skips nothing, however commits interleave.
//
// Cleanup deletes a prefix in (txid, id) order and always keeps its boundary row (see
// deleteExpired), which is what lets `retentionFloor` tell an expired cursor from a valid one.
import type { Queryable, TxSql } from './db';
import { currentTraceparent } from '../tracing';

/** Values of deployment_changes.resource_type: the kinds of desired state the outbox tracks.
 *  The store owns its column's values; the wire (src/sync/wire) names the same kinds on its
 *  side, and a test keeps the two lists equal. */
export const RESOURCE_TYPES = ['deployment_topology', 'sentinel', 'cilium_network_policy', 'environment_routes'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** LISTEN/NOTIFY channel: the doorbell that wakes ctrl's tailer when a change commits. */
export const FEED_CHANNEL = 'unkey_infra_feed';

export interface ChangeRow {
  id: string;
  resourceType: ResourceType;
  resourceId: string;
  region: string;
  /** xid8 as a decimal string: it is 64-bit and must not pass through a JS number. */
  txid: string;
  createdAt: Date;
}

/** A position in the outbox: (txid, id) as decimal strings (both exceed JS number range). */
export interface Position {
  txid: string;
  id: string;
}

/** A settled change as the feed reads it (no created_at: readers never need it). */
export interface FeedRow extends Position {
  resourceType: ResourceType;
  resourceId: string;
  region: string;
  /** W3C traceparent of the write that caused the change (null or absent: not traced). */
  traceparent?: string | null;
}

/**
 * Inserts the change row and rings the doorbell in one statement. The notification is
 * delivered only when the surrounding transaction commits, and duplicates within one
 * transaction collapse (same channel and payload), so a bulk write rings once per region.
 * The row carries the active trace context (the span of the write), so the agent's apply of
 * the change joins that trace; with tracing off it is null.
 */
export async function recordChange(tx: TxSql, resourceType: ResourceType, resourceId: string, region: string): Promise<void> {
  await tx`WITH ins AS (
             INSERT INTO deployment_changes (resource_type, resource_id, region, traceparent)
             VALUES (${resourceType}, ${resourceId}, ${region}, ${currentTraceparent()}) RETURNING region)
           SELECT pg_notify(${FEED_CHANNEL}, region) FROM ins`;
}

/** Every change row of a resource, oldest first: for tests and operators, not the feed. */
export async function listChangesFor(q: Queryable, resourceType: ResourceType, resourceId: string): Promise<ChangeRow[]> {
  return q<ChangeRow[]>`SELECT id::text AS id, resource_type, resource_id, region, txid::text AS txid, created_at
                        FROM deployment_changes
                        WHERE resource_type = ${resourceType} AND resource_id = ${resourceId}
                        ORDER BY txid, id`;
}

export interface TailResult {
  epoch: string;
  /**
   * Whether the epoch belongs to this database's history (system_state.feed_history). False
   * after a failover or restore until someone fences the feed (system.ts fenceFeed): the rows
   * then come from a history the epoch's cursors may not be part of, and must not be handed out.
   */
  fenced: boolean;
  /** Settled rows after the position, in (txid, id) order, at most `limit`. */
  rows: FeedRow[];
  /**
   * The first committed row after the position that is not settled yet (its transaction, or
   * an older one, is still running), as `txid:id`, or null. When set, the caller should look
   * again soon rather than at its idle pace; the same row staying first for long means some
   * transaction holds back every reader (settle lag).
   */
  firstPending: string | null;
  /** firstPending !== null. */
  pending: boolean;
}

type PackedRow = [string, ResourceType, string, string, string, string | null];

const unpack = ([id, resourceType, resourceId, region, txid, traceparent]: PackedRow): FeedRow => ({ id, resourceType, resourceId, region, txid, traceparent: traceparent ?? null });

/**
 * The tailer's one query per poll: settled rows of every region after `after`, whether
 * unsettled rows are waiting, and the feed epoch and whether it belongs to this history (so a
 * restore or a failover is noticed without a second query). Rows travel as one JSON array to
 * keep it a single round trip.
 */
export async function tailSettled(q: Queryable, after: Position, limit: number): Promise<TailResult> {
  const [r] = await q<{ epoch: string; fenced: boolean; firstPending: string | null; rows: PackedRow[] }[]>`
    WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
    batch AS (
      SELECT c.id, c.resource_type, c.resource_id, c.region, c.txid, c.traceparent
      FROM deployment_changes c, s
      WHERE (c.txid, c.id) > (${after.txid}::xid8, ${after.id}::bigint) AND c.txid < s.xmin
      ORDER BY c.txid, c.id
      LIMIT ${limit})
    SELECT (SELECT feed_epoch FROM system_state) AS epoch,
           (SELECT feed_history IS NOT DISTINCT FROM unkey_feed_history() FROM system_state) AS fenced,
           (SELECT c.txid::text || ':' || c.id::text FROM deployment_changes c, s
            WHERE (c.txid, c.id) > (${after.txid}::xid8, ${after.id}::bigint) AND c.txid >= s.xmin
            ORDER BY c.txid, c.id LIMIT 1) AS first_pending,
           COALESCE((SELECT json_agg(json_build_array(b.id::text, b.resource_type, b.resource_id, b.region, b.txid::text, b.traceparent)
                                     ORDER BY b.txid, b.id) FROM batch b), '[]'::json) AS rows`;
  return {
    epoch: r!.epoch,
    fenced: r!.fenced,
    firstPending: r!.firstPending,
    pending: r!.firstPending !== null,
    rows: r!.rows.map(unpack),
  };
}

/**
 * Settled rows of one region in (after, upTo], for streams whose cursor is older than the
 * tailer's in-memory buffer. `upTo` must itself be settled (the tailer only hands out settled
 * positions), so no xmin test is needed: nothing can appear at or below it any more.
 */
export async function readRegion(q: Queryable, region: string, after: Position, upTo: Position, limit: number): Promise<FeedRow[]> {
  return q<FeedRow[]>`
    SELECT id::text AS id, resource_type, resource_id, region, txid::text AS txid, traceparent
    FROM deployment_changes
    WHERE region = ${region}
      AND (txid, id) > (${after.txid}::xid8, ${after.id}::bigint)
      AND (txid, id) <= (${upTo.txid}::xid8, ${upTo.id}::bigint)
    ORDER BY txid, id
    LIMIT ${limit}`;
}

/**
 * readRegion and the retention check in one statement, so one snapshot: `behind` is true when
 * cleanup may have deleted rows after `after` (the oldest row left is older than the TTL and
 * lies beyond `after`); the rows are then incomplete and must not be sent.
 */
export async function readRegionRetained(
  q: Queryable,
  region: string,
  after: Position,
  upTo: Position,
  limit: number,
  ttlMs: number,
): Promise<{ behind: boolean; rows: FeedRow[] }> {
  const [r] = await q<{ behind: boolean | null; rows: PackedRow[] }[]>`
    WITH oldest AS (
      SELECT txid, id, created_at < now() - make_interval(secs => ${ttlMs / 1000}) AS expired
      FROM deployment_changes ORDER BY txid, id LIMIT 1),
    page AS (
      SELECT id, resource_type, resource_id, region, txid, traceparent FROM deployment_changes
      WHERE region = ${region}
        AND (txid, id) > (${after.txid}::xid8, ${after.id}::bigint)
        AND (txid, id) <= (${upTo.txid}::xid8, ${upTo.id}::bigint)
      ORDER BY txid, id
      LIMIT ${limit})
    SELECT (SELECT o.expired AND (o.txid, o.id) > (${after.txid}::xid8, ${after.id}::bigint) FROM oldest o) AS behind,
           COALESCE((SELECT json_agg(json_build_array(p.id::text, p.resource_type, p.resource_id, p.region, p.txid::text, p.traceparent)
                                     ORDER BY p.txid, p.id) FROM page p), '[]'::json) AS rows`;
  return {
    behind: r!.behind === true,
    rows: r!.rows.map(unpack),
  };
}

/**
 * xmax of the current snapshot: the first transaction id not yet handed out. No change row
 * can be at or past (xmax, 0); a cursor there comes from another timeline (a database restored
 * from an older backup), not from this one.
 */
export async function snapshotXmax(q: Queryable): Promise<string> {
  const [r] = await q<{ xmax: string }[]>`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xmax`;
  return r!.xmax;
}

/**
 * The newest settled position, or the settled boundary (xmin, 0) when no row is settled yet.
 * Everything at or before it is settled, so a reader can start just after it.
 */
export async function settledHead(q: Queryable): Promise<Position> {
  const [r] = await q<{ xmin: string; txid: string | null; id: string | null }[]>`
    WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
    SELECT s.xmin::text AS xmin, h.txid::text AS txid, h.id::text AS id
    FROM s LEFT JOIN LATERAL (
      SELECT c.txid, c.id FROM deployment_changes c WHERE c.txid < s.xmin ORDER BY c.txid DESC, c.id DESC LIMIT 1
    ) h ON true`;
  return r!.txid && r!.id ? { txid: r!.txid, id: r!.id } : { txid: r!.xmin, id: '0' };
}

export interface RetentionFloor {
  /** The oldest row still in the table, or undefined when the table is empty. */
  oldest?: Position;
  /** Whether that row is older than the TTL, i.e. cleanup may have deleted rows before it. */
  expired: boolean;
}

/**
 * What a reader needs to decide whether a cursor is older than retention. Cleanup deletes a
 * prefix in (txid, id) order and keeps its boundary row, whose created_at is older than the
 * TTL; so when rows were ever deleted, the oldest remaining row is old. A cursor before the
 * oldest row is expired when that row is old (rows between may be gone); when it is young,
 * nothing was ever deleted and the cursor is fine. The cost of the rule: a cursor issued on an
 * empty feed and then unused for longer than the TTL gets one unnecessary full sync.
 */
export async function retentionFloor(q: Queryable, ttlMs: number): Promise<RetentionFloor> {
  const [r] = await q<{ txid: string; id: string; expired: boolean }[]>`
    SELECT txid::text AS txid, id::text AS id,
           created_at < now() - make_interval(secs => ${ttlMs / 1000}) AS expired
    FROM deployment_changes ORDER BY txid, id LIMIT 1`;
  return r ? { oldest: { txid: r.txid, id: r.id }, expired: r.expired } : { expired: false };
}

/**
 * Rows per DELETE: large enough that cleaning a day of changes takes few statements, small
 * enough that each statement's transaction (which holds back every reader's xmin while it
 * runs) stays in the low milliseconds.
 */
export const CLEANUP_BATCH = 10_000;

/**
 * Deletes outbox rows older than the TTL, in statements of CLEANUP_BATCH rows. The boundary is
 * the most recently created settled row older than the TTL; every row before it in (txid, id)
 * order is deleted and the boundary itself is kept (retentionFloor relies on it). Rows a few
 * moments younger than the TTL can go with them when a long transaction wrote them under an
 * older txid; agents past the boundary never need them, agents before it get 410.
 */
export async function deleteExpired(q: Queryable, ttlMs: number, batch = CLEANUP_BATCH): Promise<number> {
  const [b] = await q<{ txid: string; id: string }[]>`
    SELECT txid::text AS txid, id::text AS id FROM deployment_changes
    WHERE created_at < now() - make_interval(secs => ${ttlMs / 1000})
      AND txid < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY created_at DESC LIMIT 1`;
  if (!b) return 0;
  let total = 0;
  for (;;) {
    const r = await q`
      DELETE FROM deployment_changes WHERE id IN (
        SELECT id FROM deployment_changes
        WHERE (txid, id) < (${b.txid}::xid8, ${b.id}::bigint)
        ORDER BY txid, id LIMIT ${batch})`;
    total += r.count;
    if (r.count < batch) return total;
  }
}
