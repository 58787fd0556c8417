// Regions and their agents' liveness (region_liveness, sql/0005_regions.sql). A region exists
// when it has an unrevoked agent token: the list is read from agent_tokens here, so the token
// module stays about tokens. Liveness rows are written by heartbeats and by whichever ctrl
// replica holds an agent's open stream; the announced `status` moves only through
// `settleStatus`, a conditional UPDATE that publishes its `region.status` event in the same
// statement, so replicas racing on one change announce it once.
import type { Queryable } from './db';
import { EVENTS_CHANNEL } from './events';

export interface RegionRow {
  region: string;
  lastSeenAt: Date | null;
  agentId: string | null;
  agentVersion: string | null;
  agentLeader: boolean;
  cursor: string | null;
  objects: Record<string, number>;
  lastFullSyncAt: Date | null;
  /** Last announced status (what `region.status` events said), not recomputed. */
  status: 'online' | 'offline' | 'never_seen';
  /** Settled changes of the region past the agent's cursor, and when the oldest was made. */
  pendingChanges: number;
  oldestPendingAt: Date | null;
  /** The database's clock, so every replica judges liveness by the same time. */
  now: Date;
  /** What the leading agent last reported about drift it healed (sql/0010_region_drift.sql). */
  drift: DriftReport | null;
  /** The region's latest apply failures (newest first, at most FAILURES_PER_REGION). */
  failures: { resourceType: string; resourceId: string; code: string; reason: string; failedAt: string }[];
}

export interface DriftReport {
  repaired: number;
  byKind?: Record<string, number>;
  lastAt?: string;
  lastObject?: string;
}

/** Enough to show what is wrong in a region listing; the full list is per resource. */
const FAILURES_PER_REGION = 20;

/** Names of the regions that have an agent token, sorted. */
export async function knownRegions(q: Queryable): Promise<string[]> {
  const rows = await q<{ region: string }[]>`SELECT DISTINCT region FROM agent_tokens WHERE revoked_at IS NULL ORDER BY region`;
  return rows.map((r) => r.region);
}

export interface HeartbeatRow {
  region: string;
  agentId: string;
  version: string;
  leader: boolean;
  cursor: string | null;
  objects: Record<string, number>;
  lastFullSyncAt: Date | null;
  /** Undefined: an agent that does not report drift; the stored report is kept. */
  drift?: DriftReport;
}

/** Records a heartbeat of the region's leading agent: it was seen now, with what it reported. */
export async function recordHeartbeat(q: Queryable, h: HeartbeatRow): Promise<void> {
  const drift = h.drift ? q.json(h.drift as never) : null;
  await q`INSERT INTO region_liveness (region, last_seen_at, agent_id, agent_version, agent_leader, cursor, objects, last_full_sync_at, drift)
          VALUES (${h.region}, now(), ${h.agentId}, ${h.version}, ${h.leader}, ${h.cursor}, ${q.json(h.objects)}, ${h.lastFullSyncAt}, ${drift})
          ON CONFLICT (region) DO UPDATE SET
            last_seen_at = now(), agent_id = EXCLUDED.agent_id, agent_version = EXCLUDED.agent_version,
            agent_leader = EXCLUDED.agent_leader, cursor = COALESCE(EXCLUDED.cursor, region_liveness.cursor),
            objects = EXCLUDED.objects, last_full_sync_at = COALESCE(EXCLUDED.last_full_sync_at, region_liveness.last_full_sync_at),
            drift = COALESCE(EXCLUDED.drift, region_liveness.drift)`;
}

/** Marks regions as seen now (their agents hold an open feed stream on this replica). */
export async function touchRegions(q: Queryable, regions: string[]): Promise<void> {
  if (regions.length === 0) return;
  await q`INSERT INTO region_liveness (region, last_seen_at) SELECT r, now() FROM unnest(${regions}::text[]) AS r
          ON CONFLICT (region) DO UPDATE SET last_seen_at = now()`;
}

/** A key's scope: apply failures of other resources are left out of its view. */
export interface FailureScope {
  workspaceId: string;
  projectId: string | null;
  environmentId: string | null;
}

/**
 * Every known region with its liveness row (if any) and its lag. Lag counts settled changes
 * (txid < pg_snapshot_xmin, as the feed reads them) past the agent's cursor; a cursor of
 * another feed epoch, or none yet, means everything of the region is pending. With a scope,
 * a region's apply failures are those of the scope's resources only, chosen before the limit
 * (a failure names its resource and quotes the cluster about it: another tenant's is not to be
 * seen, and its number must not crowd the scope's own out).
 */
export async function listRegions(q: Queryable, only?: string, scope: FailureScope | null = null): Promise<RegionRow[]> {
  const ws = scope?.workspaceId ?? null;
  const prj = scope?.projectId ?? null;
  const env = scope?.environmentId ?? null;
  return q<RegionRow[]>`
    WITH known AS (SELECT DISTINCT region FROM agent_tokens WHERE revoked_at IS NULL),
         epoch AS (SELECT feed_epoch FROM system_state)
    SELECT k.region, l.last_seen_at, l.agent_id, l.agent_version, COALESCE(l.agent_leader, false) AS agent_leader,
           l.cursor, COALESCE(l.objects, '{}'::jsonb) AS objects, l.last_full_sync_at,
           COALESCE(l.status, 'never_seen') AS status, lag.pending AS pending_changes, lag.oldest AS oldest_pending_at, now() AS now,
           l.drift, fail.list AS failures
    FROM known k
    LEFT JOIN region_liveness l ON l.region = k.region
    CROSS JOIN epoch e
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS pending, min(c.created_at) AS oldest
      FROM deployment_changes c
      WHERE c.region = k.region
        AND c.txid < pg_snapshot_xmin(pg_current_snapshot())
        AND (l.cursor IS NULL OR split_part(l.cursor, ':', 1) <> e.feed_epoch
             OR (c.txid, c.id) > (split_part(l.cursor, ':', 2)::xid8, split_part(l.cursor, ':', 3)::bigint))
    ) lag
    CROSS JOIN LATERAL (
      SELECT COALESCE(json_agg(json_build_object('resourceType', f.resource_type, 'resourceId', f.resource_id, 'code', f.code,
                                                 'reason', f.reason, 'failedAt', f.failed_at) ORDER BY f.failed_at DESC), '[]'::json) AS list
      FROM (SELECT * FROM apply_failures af
            WHERE af.region = k.region
              AND (${ws}::text IS NULL OR EXISTS (
                SELECT 1 FROM (
                  SELECT workspace_id, project_id, environment_id FROM deployments WHERE af.resource_type = 'deployment_topology' AND id = af.resource_id
                  UNION ALL
                  SELECT workspace_id, project_id, environment_id FROM sentinels WHERE af.resource_type = 'sentinel' AND id = af.resource_id
                  UNION ALL
                  SELECT workspace_id, project_id, environment_id FROM cilium_network_policies WHERE af.resource_type = 'cilium_network_policy' AND id = af.resource_id
                  UNION ALL
                  SELECT workspace_id, project_id, id FROM environments WHERE af.resource_type = 'environment_routes' AND id = af.resource_id
                ) o
                WHERE o.workspace_id = ${ws} AND (${prj}::text IS NULL OR o.project_id = ${prj}) AND (${env}::text IS NULL OR o.environment_id = ${env})))
            ORDER BY failed_at DESC LIMIT ${FAILURES_PER_REGION}) f
    ) fail
    WHERE ${only ?? null}::text IS NULL OR k.region = ${only ?? null}
    ORDER BY k.region`;
}

/**
 * Moves a region's announced status to what its last sign of life says now (`online` within
 * `offlineAfterMs`, else `offline`) unless it is there already, and publishes the `region.status`
 * live event in the same statement. The decision is made by the UPDATE from the row it writes:
 * deciding from an earlier read let a tick announce `offline` over a heartbeat that committed
 * between its read and its write (issue 23); a concurrent heartbeat now makes the UPDATE
 * re-read the row and decide again. Regions never seen are left alone. Returns the status this
 * call moved the region to, if it moved it: of several replicas noticing the same change,
 * exactly one gets it.
 */
export async function settleStatus(q: Queryable, region: string, offlineAfterMs: number): Promise<'online' | 'offline' | null> {
  const rows = await q<{ status: 'online' | 'offline' }[]>`
    WITH moved AS (
      UPDATE region_liveness
      SET status = CASE WHEN now() - last_seen_at > ${offlineAfterMs} * interval '1 millisecond' THEN 'offline' ELSE 'online' END,
          status_changed_at = now()
      WHERE region = ${region} AND last_seen_at IS NOT NULL
        AND status <> CASE WHEN now() - last_seen_at > ${offlineAfterMs} * interval '1 millisecond' THEN 'offline' ELSE 'online' END
      RETURNING region, status, last_seen_at)
    SELECT status, pg_notify(${EVENTS_CHANNEL}, json_build_object('type', 'region.status', 'region', region, 'status', status, 'lastSeenAt', last_seen_at)::text)
    FROM moved`;
  return rows[0]?.status ?? null;
}

/** When each of the regions was last seen (null: never), with the database's clock. */
export async function lastSeen(q: Queryable, regions: readonly string[]): Promise<{ now: Date; seen: Map<string, Date | null> }> {
  const rows = await q<{ region: string; lastSeenAt: Date | null; now: Date }[]>`
    SELECT r AS region, l.last_seen_at, now() AS now
    FROM unnest(${regions as string[]}::text[]) AS r LEFT JOIN region_liveness l ON l.region = r`;
  const now = rows[0]?.now ?? new Date();
  return { now, seen: new Map(rows.map((r) => [r.region, r.lastSeenAt])) };
}

/** Each sentinel's region and when that region was last seen, with the database's clock. */
export async function sentinelRegionsSeen(q: Queryable, ids: readonly string[]): Promise<{ id: string; region: string; lastSeenAt: Date | null; now: Date }[]> {
  if (ids.length === 0) return [];
  return q<{ id: string; region: string; lastSeenAt: Date | null; now: Date }[]>`
    SELECT s.id, s.region, l.last_seen_at, now() AS now
    FROM sentinels s LEFT JOIN region_liveness l ON l.region = s.region
    WHERE s.id = ANY(${ids as string[]}::text[])`;
}

/** Of the given sentinels, those whose desired image is `image` (their new image was written). */
export async function sentinelsWithImage(q: Queryable, ids: readonly string[], image: string): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await q<{ id: string }[]>`SELECT id FROM sentinels WHERE id = ANY(${ids as string[]}::text[]) AND image = ${image} ORDER BY id`;
  return rows.map((r) => r.id);
}
