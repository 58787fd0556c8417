// Desired-state reads behind the change feed: a region's full desired state in one consistent snapshot (with
// the outbox head of that same snapshot), and batched or single lookups of current desired
// state for resources named by change rows. Rows come back raw; src/sync/desired.ts turns them
// into the wire's DesiredState, so the mapping stays a pure, table-tested function.
import type { Queryable, Sql } from './db';
import type { RunState as DesiredStatus } from './deployments';
import type { Position } from './changes';
import type { ResourceType } from './changes';

interface ScopeCols {
  workspaceId: string;
  projectId: string;
  appId: string;
  environmentId: string;
}

/** A topology row with the deployment fields its desired state needs. */
export interface TopologyDesiredRow extends ScopeCols {
  deploymentId: string;
  region: string;
  /** Null while the deployment is still being built. */
  image: string | null;
  replicas: number;
  cpuMillicores: number;
  memoryMib: number;
  port: number;
  command: string[];
  env: Record<string, string>;
  /** Always selected; optional so rows built by hand (tests) may leave it out (false). */
  readOnlyRootFilesystem?: boolean;
  /** { minReplicas, maxReplicas, cpuUtilization } of an autoscaled deployment; null otherwise. */
  autoscaling?: { minReplicas: number; maxReplicas: number; cpuUtilization: number } | null;
  desiredStatus: DesiredStatus;
  /** The deployment's desired-state generation (sql/0009); optional for rows built by hand. */
  desiredGeneration?: number;
}

export interface SentinelDesiredRow extends ScopeCols {
  id: string;
  region: string;
  image: string;
  replicas: number;
  cpuMillicores: number;
  memoryMib: number;
  desiredState: DesiredStatus;
}

export interface CiliumDesiredRow extends ScopeCols {
  id: string;
  region: string;
  desiredState: DesiredStatus;
}

/** An environment's routing table as one region applies it. */
export interface RoutesDesiredRow extends ScopeCols {
  region: string;
  hostname: string;
  /** In table order; `replicas` is the backend's running replicas in this region (0: none here);
   *  `ordinals`, the StatefulSet ordinals of its pods krane reports running (Ready) here, which
   *  the routes address (issue 33: an autoscaler's pods beyond the replicas get traffic). */
  backends: { deploymentId: string; weight: number; replicas: number; ordinals?: number[] }[];
}

export type DesiredRows =
  | { type: 'deployment_topology'; rows: TopologyDesiredRow[] }
  | { type: 'sentinel'; rows: SentinelDesiredRow[] }
  | { type: 'cilium_network_policy'; rows: CiliumDesiredRow[] }
  | { type: 'environment_routes'; rows: RoutesDesiredRow[] };

const topologyCols = (q: Queryable) => q`
  t.deployment_id, t.region, d.workspace_id, d.project_id, d.app_id, d.environment_id, d.image,
  t.replicas, d.cpu_millicores, d.memory_mib, d.port, d.command, d.env, d.read_only_root_filesystem, d.autoscaling, t.desired_status,
  d.desired_generation::int AS desired_generation`;
const sentinelCols = (q: Queryable) => q`
  id, workspace_id, project_id, app_id, environment_id, region, image, replicas, cpu_millicores, memory_mib, desired_state`;
const ciliumCols = (q: Queryable) => q`id, workspace_id, project_id, app_id, environment_id, region, desired_state`;
/**
 * A region's view of routing tables: each backend with its replicas there and the ordinals of
 * its pods krane reports running there (a stopped topology has none), for krane to address.
 */
const routesCols = (q: Queryable, region: string) => q`
  r.environment_id, e.workspace_id, e.project_id, e.app_id, ${region}::text AS region, r.hostname,
  COALESCE((SELECT jsonb_agg(jsonb_build_object(
      'deploymentId', b->>'deploymentId', 'weight', (b->>'weight')::int,
      'replicas', COALESCE((SELECT t.replicas FROM deployment_topology t
                            WHERE t.deployment_id = b->>'deploymentId' AND t.region = ${region} AND t.desired_status = 'running'), 0),
      'ordinals', COALESCE((SELECT jsonb_agg(n ORDER BY n) FROM (
                    SELECT substring(i.pod_name from '-([0-9]+)$')::int AS n FROM instances i
                    WHERE i.deployment_id = b->>'deploymentId' AND i.region = ${region} AND i.status = 'running'
                      AND i.pod_name ~ '-[0-9]{1,6}$'
                      AND EXISTS (SELECT 1 FROM deployment_topology t
                                  WHERE t.deployment_id = i.deployment_id AND t.region = i.region AND t.desired_status = 'running')) p), '[]'::jsonb))
    ORDER BY o) FROM jsonb_array_elements(r.backends) WITH ORDINALITY AS x(b, o)), '[]'::jsonb) AS backends`;

export interface SnapshotResult {
  epoch: string;
  /**
   * Outbox position of the snapshot: the newest row whose transaction is older than the
   * snapshot's xmin, or (xmin, 0) when there is none. Every such transaction committed before
   * the snapshot, so its effect is in the rows read; every change after the head is delivered
   * incrementally (some were already visible, and arrive twice, which level-triggered events
   * make harmless).
   */
  head: Position;
  count: number;
}

/**
 * Streams every topology, sentinel, cilium policy and routing table of a region to `onBatch`, all read in one
 * REPEATABLE READ snapshot together with the epoch and head. `onBatch` is awaited, so a slow
 * consumer slows the read instead of piling rows up in memory. The snapshot transaction is
 * read-only and has no xid, so it does not hold back any other reader's xmin.
 */
export async function readRegionSnapshot(
  sql: Sql,
  region: string,
  batchSize: number,
  onBatch: (batch: DesiredRows) => Promise<void>,
): Promise<SnapshotResult> {
  return (await readRegionSnapshotIf(sql, region, batchSize, onBatch, () => true))!;
}

/**
 * readRegionSnapshot, but `accept` sees the snapshot's epoch and head before any row is read
 * and may refuse it (undefined is returned, onBatch never called): a hot standby's snapshot is
 * used only when it is of the feed's epoch and not older than a position the caller needs.
 */
export async function readRegionSnapshotIf(
  sql: Sql,
  region: string,
  batchSize: number,
  onBatch: (batch: DesiredRows) => Promise<void>,
  accept: (h: { epoch: string; head: Position }) => boolean,
): Promise<SnapshotResult | undefined> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const [h] = await tx<{ epoch: string; xmin: string; txid: string | null; id: string | null }[]>`
      WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
      SELECT (SELECT feed_epoch FROM system_state) AS epoch, s.xmin::text AS xmin, h.txid::text AS txid, h.id::text AS id
      FROM s LEFT JOIN LATERAL (
        SELECT c.txid, c.id FROM deployment_changes c WHERE c.txid < s.xmin ORDER BY c.txid DESC, c.id DESC LIMIT 1
      ) h ON true`;
    const head = h!.txid && h!.id ? { txid: h!.txid, id: h!.id } : { txid: h!.xmin, id: '0' };
    if (!accept({ epoch: h!.epoch, head })) return undefined;
    let count = 0;
    // postgres.js calls the cursor callback of the last batch without awaiting it or handling
    // its rejection (an unhandled rejection kills the process). So each batch's work is kept
    // and awaited before the next query, and a failing onBatch is caught, the cursor closed,
    // and the error rethrown once the queries have ended.
    let failed: { err: unknown } | undefined;
    let inFlight: Promise<unknown> = Promise.resolve();
    const each = <T>(type: DesiredRows['type']) => (rows: T[]) => {
      inFlight = (async () => {
        if (failed) return sql.CLOSE;
        count += rows.length;
        try {
          await onBatch({ type, rows } as DesiredRows);
        } catch (err) {
          failed = { err };
          return sql.CLOSE;
        }
        return undefined;
      })();
      return inFlight;
    };
    const read = async (q: Promise<unknown>) => {
      await q;
      await inFlight;
    };
    await read(tx<TopologyDesiredRow[]>`
      SELECT ${topologyCols(tx)} FROM deployment_topology t JOIN deployments d ON d.id = t.deployment_id
      WHERE t.region = ${region}`.cursor(batchSize, each<TopologyDesiredRow>('deployment_topology')));
    if (!failed) await read(tx<SentinelDesiredRow[]>`SELECT ${sentinelCols(tx)} FROM sentinels WHERE region = ${region}`.cursor(batchSize, each<SentinelDesiredRow>('sentinel')));
    if (!failed) {
      await read(
        tx<CiliumDesiredRow[]>`SELECT ${ciliumCols(tx)} FROM cilium_network_policies WHERE region = ${region}`.cursor(batchSize, each<CiliumDesiredRow>('cilium_network_policy')),
      );
    }
    if (!failed) {
      await read(
        tx<RoutesDesiredRow[]>`SELECT ${routesCols(tx, region)} FROM environment_routes r JOIN environments e ON e.id = r.environment_id
                               WHERE ${region} = ANY(r.regions)`.cursor(batchSize, each<RoutesDesiredRow>('environment_routes')),
      );
    }
    if (failed) throw failed.err;
    return { epoch: h!.epoch, head, count };
  }) as Promise<SnapshotResult | undefined>;
}

/**
 * Current desired rows of the named resources of one region, one query per resource type
 * present. The ids are joined as a relation (unnest), not tested with `= ANY(array)`: with a
 * region index available the planner may otherwise scan the whole region and compare every row
 * against the array, which at 100k rows × 1,000 ids takes seconds. Resources without a row are simply absent from the result (the caller maps absence
 * to delete).
 */
export async function loadDesiredRows(
  q: Queryable,
  region: string,
  refs: ReadonlyArray<{ type: ResourceType; id: string }>,
): Promise<DesiredRows[]> {
  const ids: Record<ResourceType, string[]> = { deployment_topology: [], sentinel: [], cilium_network_policy: [], environment_routes: [] };
  for (const r of refs) ids[r.type].push(r.id);
  const out: Promise<DesiredRows>[] = [];
  if (ids.deployment_topology.length) {
    out.push(
      q<TopologyDesiredRow[]>`
        SELECT ${topologyCols(q)} FROM unnest(${ids.deployment_topology}::text[]) AS u(id)
        JOIN deployment_topology t ON t.deployment_id = u.id AND t.region = ${region}
        JOIN deployments d ON d.id = t.deployment_id`.then((rows) => ({
        type: 'deployment_topology' as const,
        rows: [...rows],
      })),
    );
  }
  if (ids.sentinel.length) {
    out.push(
      q<SentinelDesiredRow[]>`SELECT ${sentinelCols(q)} FROM unnest(${ids.sentinel}::text[]) AS u(uid)
                              JOIN sentinels ON id = u.uid AND region = ${region}`.then((rows) => ({
        type: 'sentinel' as const,
        rows: [...rows],
      })),
    );
  }
  if (ids.cilium_network_policy.length) {
    out.push(
      q<CiliumDesiredRow[]>`SELECT ${ciliumCols(q)} FROM unnest(${ids.cilium_network_policy}::text[]) AS u(uid)
                            JOIN cilium_network_policies ON id = u.uid AND region = ${region}`.then((rows) => ({
        type: 'cilium_network_policy' as const,
        rows: [...rows],
      })),
    );
  }
  if (ids.environment_routes.length) {
    out.push(
      q<RoutesDesiredRow[]>`SELECT ${routesCols(q, region)} FROM unnest(${ids.environment_routes}::text[]) AS u(uid)
                            JOIN environment_routes r ON r.environment_id = u.uid AND ${region} = ANY(r.regions)
                            JOIN environments e ON e.id = r.environment_id`.then((rows) => ({
        type: 'environment_routes' as const,
        rows: [...rows],
      })),
    );
  }
  return Promise.all(out);
}

export async function getTopologyDesired(q: Queryable, deploymentId: string, region: string): Promise<TopologyDesiredRow | undefined> {
  const [row] = await q<TopologyDesiredRow[]>`
    SELECT ${topologyCols(q)} FROM deployment_topology t JOIN deployments d ON d.id = t.deployment_id
    WHERE t.deployment_id = ${deploymentId} AND t.region = ${region}`;
  return row;
}

/** Within one region: a sentinel of another region is absent, like a missing one. */
export async function getSentinelDesired(q: Queryable, id: string, region: string): Promise<SentinelDesiredRow | undefined> {
  const [row] = await q<SentinelDesiredRow[]>`SELECT ${sentinelCols(q)} FROM sentinels WHERE id = ${id} AND region = ${region}`;
  return row;
}
