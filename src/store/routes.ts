// environment_routes: each environment's routing table (hostname and weighted backends), the
// traffic half of desired state (issue 13). `setRoutes` (with `clearRoutes`, its empty case) is
// the only writer and records one deployment_changes row per region in the same transaction,
// like topology.ts: every region that had the table or has it now learns of the change,
// including one that no longer has it (it finds no row for itself and deletes its ConfigMap).
// A region's routes also address each backend's running pods there (store/desired-state.ts), so
// a status report that moves them records a change too (`backendsMoved`, issue 33).
import type { Queryable } from './db';
import { recordChange } from './changes';
import { inTx } from './tx';
import { publishEvent } from './events';

export interface Backend {
  deploymentId: string;
  /** Percent of the environment's traffic, 0-100; a table's weights sum to 100. */
  weight: number;
}

export interface Routes {
  environmentId: string;
  workspaceId: string;
  hostname: string;
  backends: Backend[];
  /** Where the table is applied: the regions of its backends. */
  regions: string[];
  updatedAt: Date;
}

/** Why a backend list cannot be a routing table, or undefined when it can. Pure. */
export function invalidBackends(backends: readonly Backend[]): string | undefined {
  if (backends.length === 0) return 'a routing table needs at least one backend';
  const seen = new Set<string>();
  for (const b of backends) {
    if (!Number.isInteger(b.weight) || b.weight < 0 || b.weight > 100) return `weight of ${b.deploymentId} must be an integer 0-100, not ${b.weight}`;
    if (seen.has(b.deploymentId)) return `deployment ${b.deploymentId} appears twice`;
    seen.add(b.deploymentId);
  }
  const sum = backends.reduce((n, b) => n + b.weight, 0);
  return sum === 100 ? undefined : `weights sum to ${sum}, not 100`;
}

export class InvalidRoutesError extends Error {}

/**
 * Replaces an environment's routing table in one change. The regions are those of the
 * backends' deployments; a change row goes to each of them and to each region that had the
 * table before. Idempotent: a retried step writes the same table (and harmless extra rows).
 */
export async function setRoutes(
  q: Queryable,
  r: { environmentId: string; workspaceId: string; hostname: string; backends: Backend[] },
): Promise<Routes> {
  const bad = invalidBackends(r.backends);
  if (bad) throw new InvalidRoutesError(bad);
  return writeRoutes(q, r);
}

/**
 * Empties an environment's table: nothing serves its hostname (the last deployment that did
 * was stopped). The table stays, with no backends and in no region, so every region that had
 * it deletes its ConfigMap. Apart from setRoutes because an empty table must be asked for: a
 * computed split that came out empty is a bug that setRoutes refuses.
 */
export async function clearRoutes(q: Queryable, r: { environmentId: string; workspaceId: string; hostname: string }): Promise<Routes> {
  return writeRoutes(q, { ...r, backends: [] });
}

function writeRoutes(q: Queryable, r: { environmentId: string; workspaceId: string; hostname: string; backends: Backend[] }): Promise<Routes> {
  return inTx(q, async (tx) => {
    const ids = r.backends.map((b) => b.deploymentId);
    const [regions] = await tx<{ regions: string[] | null }[]>`
      SELECT array_agg(DISTINCT x ORDER BY x) AS regions FROM deployments, unnest(regions) AS x WHERE id = ANY(${ids}::text[])`;
    const [old] = await tx<{ regions: string[] }[]>`SELECT regions FROM environment_routes WHERE environment_id = ${r.environmentId} FOR UPDATE`;
    if (!old) await creatingTable(tx, r.environmentId);
    const now = regions?.regions ?? [];
    const [row] = await tx<Routes[]>`
      INSERT INTO environment_routes (environment_id, workspace_id, hostname, backends, regions)
      VALUES (${r.environmentId}, ${r.workspaceId}, ${r.hostname}, ${tx.json(r.backends as never)}, ${now})
      ON CONFLICT (environment_id) DO UPDATE
        SET hostname = EXCLUDED.hostname, backends = EXCLUDED.backends, regions = EXCLUDED.regions, updated_at = now()
      RETURNING *`;
    for (const region of new Set([...(old?.regions ?? []), ...now])) await recordChange(tx, 'environment_routes', r.environmentId, region);
    await publishEvent(tx, { type: 'deployment.traffic', environmentId: r.environmentId, hostname: r.hostname, backends: r.backends });
    return row!;
  });
}

/** Of these environments, those whose routing table is sent to `region` (its `regions`). */
export async function routesInRegion(q: Queryable, environmentIds: string[], region: string): Promise<Set<string>> {
  if (!environmentIds.length) return new Set();
  const rows = await q<{ environmentId: string }[]>`
    SELECT environment_id FROM environment_routes WHERE environment_id = ANY(${environmentIds}::text[]) AND ${region} = ANY(regions)`;
  return new Set(rows.map((r) => r.environmentId));
}

export async function getRoutes(q: Queryable, environmentId: string): Promise<Routes | undefined> {
  const [row] = await q<Routes[]>`SELECT * FROM environment_routes WHERE environment_id = ${environmentId}`;
  return row;
}

/**
 * Locks the table for a read-modify-write (a canary step reads the weights it changes). The row
 * is the environment's traffic lock (src/workflow/progressive/traffic.ts states the lock order), so an
 * environment that never had traffic gets an empty one first: locking a row that does not exist
 * would lock nothing, and two first writers would meet only at their INSERT, after each had
 * locked other rows. The empty row is in no region, so it needs no change row.
 */
export async function lockRoutes(q: Queryable, r: { environmentId: string; workspaceId: string; hostname: string }): Promise<Routes> {
  const created = await q`INSERT INTO environment_routes (environment_id, workspace_id, hostname) VALUES (${r.environmentId}, ${r.workspaceId}, ${r.hostname})
          ON CONFLICT (environment_id) DO NOTHING RETURNING environment_id`;
  if (created.length) await creatingTable(q, r.environmentId);
  const [row] = await q<Routes[]>`SELECT * FROM environment_routes WHERE environment_id = ${r.environmentId} FOR UPDATE`;
  return row!;
}

/**
 * Holds the routing tables of the environments of `deploymentIds` (FOR SHARE) until the
 * transaction ends, for a status report about to change their pods' rows. A traffic write
 * (lockRoutes: FOR UPDATE) then either commits before the report reads the tables, or waits
 * for the report to commit: never does the feed send a table written while the report was open
 * without its pods and the report, having read the table as it was, record nothing after it.
 * Taken before the report's own writes: the routes row is every environment's first lock
 * (src/workflow/progressive/traffic.ts), and a walk holding it goes on to lock the deployment
 * row that a report's new instance row holds FOR KEY SHARE (its foreign key). Tables in id
 * order, as two reports may share them with a writer between. A table not there yet (or being
 * created, not committed) has no row to hold: the report holds the environment's table
 * advisory lock in share mode instead, which the write creating the table takes exclusively.
 */
export async function holdRoutesOf(q: Queryable, deploymentIds: readonly string[]): Promise<void> {
  if (deploymentIds.length === 0) return;
  const envs = await q<{ environmentId: string; held: boolean }[]>`
    WITH envs AS (SELECT DISTINCT environment_id FROM deployments WHERE id = ANY(${deploymentIds as string[]}::text[])),
    held AS (SELECT r.environment_id FROM environment_routes r WHERE r.environment_id IN (SELECT environment_id FROM envs)
             ORDER BY r.environment_id FOR SHARE)
    SELECT e.environment_id, h.environment_id IS NOT NULL AS held FROM envs e LEFT JOIN held h USING (environment_id)`;
  const missingEnvs = envs.filter((e) => !e.held).map((e) => e.environmentId);
  if (missingEnvs.length === 0) return;
  const missing = missingEnvs.map(tableLockKey);
  // In key order (a volatile call in the select list runs after the sort).
  await q`SELECT pg_advisory_xact_lock_shared(hashtext(k)) FROM unnest(${missing}::text[]) AS k ORDER BY k`;
  // A table whose creation committed between the first statement and these locks was granted
  // at once and is held by nothing yet; a later write to it is no creation and takes no
  // advisory lock. This new statement sees it committed and holds it (the second review).
  await q`SELECT environment_id FROM environment_routes WHERE environment_id = ANY(${missingEnvs}::text[]) ORDER BY environment_id FOR SHARE`;
}

/** The advisory lock a table's creation holds (a hash: another key sharing it only waits). */
const tableLockKey = (environmentId: string) => `environment_routes:${environmentId}`;

/** Taken by the write that inserts an environment's table (before or just after its insert): a
 *  report that found no table to hold waits for the write's commit, or the write for the report's. */
async function creatingTable(q: Queryable, environmentId: string): Promise<void> {
  await q`SELECT pg_advisory_xact_lock(hashtext(${tableLockKey(environmentId)}))`;
}

/**
 * Records a routes change in `region` for every table that gives one of `deploymentIds` a share
 * and applies there: their running pods in the region moved (a pod became Ready or went, an
 * autoscaler scaled), so the addresses the region's routes list did. A backend at weight 0 (a
 * canary joining, its pods starting) carries no traffic: its addresses are read afresh by the
 * write that gives it a share, so its pods' comings and goings change nothing before that. That
 * holds only if the caller held the tables (holdRoutesOf) before writing the pods: the write
 * giving a share then commits before this read, or after the caller (so the feed reads the
 * table with the caller's pods). Returns the environments.
 */
export async function backendsMoved(q: Queryable, region: string, deploymentIds: readonly string[]): Promise<string[]> {
  if (deploymentIds.length === 0) return [];
  return inTx(q, async (tx) => {
    const rows = await tx<{ environmentId: string }[]>`
      SELECT r.environment_id FROM environment_routes r
      WHERE ${region} = ANY(r.regions)
        AND EXISTS (SELECT 1 FROM jsonb_array_elements(r.backends) b
                    WHERE b->>'deploymentId' = ANY(${deploymentIds as string[]}::text[]) AND (b->>'weight')::int > 0)`;
    for (const r of rows) await recordChange(tx, 'environment_routes', r.environmentId, region);
    return rows.map((r) => r.environmentId);
  });
}

/** The backends of every environment whose traffic is split between deployments (a canary or a
 *  blue-green switch in progress): what the dashboard draws as canary traffic. */
export async function splitBackends(q: Queryable): Promise<{ environmentId: string; deploymentId: string; weight: number }[]> {
  return q<{ environmentId: string; deploymentId: string; weight: number }[]>`
    SELECT r.environment_id, b->>'deploymentId' AS deployment_id, (b->>'weight')::int AS weight
    FROM environment_routes r, jsonb_array_elements(r.backends) b
    WHERE jsonb_array_length(r.backends) > 1`;
}
