// instances: the actual state krane reports, one row per pod. Upserts are keyed by
// (deployment, region, pod) so repeated reports converge to the latest.
import type { Queryable } from './db';

export const INSTANCE_STATUSES = ['pending', 'creating', 'running', 'failed'] as const;
export type InstanceStatus = (typeof INSTANCE_STATUSES)[number];

export interface Instance {
  deploymentId: string;
  region: string;
  podName: string;
  address: string | null;
  status: InstanceStatus;
  reason: string | null;
  cpuMillicores: number;
  memoryMib: number;
  /** The desired-state generation krane had applied when it saw the pod (sql/0017). */
  generation?: number | null;
  updatedAt: Date;
}

export type NewInstance = Omit<Instance, 'updatedAt'>;

export async function upsertInstance(q: Queryable, i: NewInstance): Promise<void> {
  await q`
    INSERT INTO instances (deployment_id, region, pod_name, address, status, reason, cpu_millicores, memory_mib, generation)
    VALUES (${i.deploymentId}, ${i.region}, ${i.podName}, ${i.address}, ${i.status}, ${i.reason}, ${i.cpuMillicores}, ${i.memoryMib}, ${i.generation ?? null})
    ON CONFLICT (deployment_id, region, pod_name) DO UPDATE
      SET address = EXCLUDED.address, status = EXCLUDED.status, reason = EXCLUDED.reason,
          cpu_millicores = EXCLUDED.cpu_millicores, memory_mib = EXCLUDED.memory_mib, generation = EXCLUDED.generation, updated_at = now()`;
}

export async function deleteInstance(q: Queryable, deploymentId: string, region: string, podName: string): Promise<void> {
  await q`DELETE FROM instances WHERE deployment_id = ${deploymentId} AND region = ${region} AND pod_name = ${podName}`;
}

export async function listInstances(q: Queryable, deploymentId: string): Promise<Instance[]> {
  return q<Instance[]>`SELECT * FROM instances WHERE deployment_id = ${deploymentId} ORDER BY region, pod_name`;
}

/** Upserts many reports in one statement; the last report per (deployment, region, pod) wins. */
export async function upsertInstances(q: Queryable, rows: NewInstance[]): Promise<number> {
  const byKey = new Map<string, NewInstance>();
  for (const r of rows) byKey.set(`${r.deploymentId}\u0000${r.region}\u0000${r.podName}`, r);
  const list = [...byKey.values()];
  if (!list.length) return 0;
  const res = await q`
    INSERT INTO instances (deployment_id, region, pod_name, address, status, reason, cpu_millicores, memory_mib, generation)
    SELECT * FROM unnest(
      ${list.map((r) => r.deploymentId)}::text[], ${list.map((r) => r.region)}::text[], ${list.map((r) => r.podName)}::text[],
      ${list.map((r) => r.address) as string[]}::text[], ${list.map((r) => r.status)}::text[], ${list.map((r) => r.reason) as string[]}::text[],
      ${list.map((r) => r.cpuMillicores)}::int[], ${list.map((r) => r.memoryMib)}::int[], ${list.map((r) => r.generation ?? null) as number[]}::int[])
    ON CONFLICT (deployment_id, region, pod_name) DO UPDATE
      SET address = EXCLUDED.address, status = EXCLUDED.status, reason = EXCLUDED.reason,
          cpu_millicores = EXCLUDED.cpu_millicores, memory_mib = EXCLUDED.memory_mib, generation = EXCLUDED.generation, updated_at = now()`;
  return res.count;
}

/** Deletes the named pods' rows of one region. */
export async function deleteInstances(q: Queryable, region: string, pods: { deploymentId: string; podName: string }[]): Promise<number> {
  if (!pods.length) return 0;
  const res = await q`
    DELETE FROM instances i USING unnest(${pods.map((p) => p.deploymentId)}::text[], ${pods.map((p) => p.podName)}::text[]) AS d(deployment_id, pod_name)
    WHERE i.deployment_id = d.deployment_id AND i.pod_name = d.pod_name AND i.region = ${region}`;
  return res.count;
}

/**
 * Deletes the region's rows of every pod not in `keep` (krane's complete set of the region's
 * pods after a full list) and last updated more than `olderThanMs` ago: a row written since the
 * list began may describe a pod the list did not see yet (another krane replica's report, a
 * body delivered out of order), and is left for the next set. Returns the rows deleted.
 */
export async function deleteInstancesNotIn(
  q: Queryable,
  region: string,
  keep: { deploymentId: string; podName: string }[],
  olderThanMs: number,
): Promise<{ deploymentId: string; podName: string; status: InstanceStatus }[]> {
  return q<{ deploymentId: string; podName: string; status: InstanceStatus }[]>`
    DELETE FROM instances i
    WHERE i.region = ${region} AND i.updated_at < now() - ${olderThanMs} * interval '1 millisecond'
      AND NOT EXISTS (SELECT 1 FROM unnest(${keep.map((p) => p.deploymentId)}::text[], ${keep.map((p) => p.podName)}::text[]) AS k(deployment_id, pod_name)
                      WHERE k.deployment_id = i.deployment_id AND k.pod_name = i.pod_name)
    RETURNING i.deployment_id, i.pod_name, i.status`;
}

/**
 * The pods of each of `ids` that krane last reported running (Ready) in `region`, sorted: what
 * the region's routes address (store/desired-state.ts). A status report compares them before and
 * after its writes to know whose routes moved (issue 33).
 */
export async function runningPods(q: Queryable, region: string, ids: readonly string[]): Promise<Map<string, string[]>> {
  if (ids.length === 0) return new Map();
  const rows = await q<{ deploymentId: string; pods: string[] }[]>`
    SELECT deployment_id, array_agg(pod_name ORDER BY pod_name) AS pods FROM instances
    WHERE region = ${region} AND status = 'running' AND deployment_id = ANY(${ids as string[]}::text[])
    GROUP BY deployment_id`;
  return new Map(rows.map((r) => [r.deploymentId, r.pods]));
}

/** The deployments with a pod running (Ready) in `region`: whose routes a complete set that
 *  prunes rows (deleteInstancesNotIn) can move. */
export async function deploymentsIn(q: Queryable, region: string): Promise<string[]> {
  const rows = await q<{ deploymentId: string }[]>`SELECT DISTINCT deployment_id FROM instances WHERE region = ${region} AND status = 'running'`;
  return rows.map((r) => r.deploymentId);
}

/**
 * For each deployment id: whether it exists and whether it has a topology row in `region`.
 * Ids absent from the result do not exist. The cluster API uses it to keep an agent to its region.
 */
export async function deploymentRegionMembership(
  q: Queryable,
  ids: string[],
  region: string,
): Promise<Map<string, boolean>> {
  if (!ids.length) return new Map();
  const rows = await q<{ id: string; inRegion: boolean }[]>`
    SELECT d.id, EXISTS (SELECT 1 FROM deployment_topology t WHERE t.deployment_id = d.id AND t.region = ${region}) AS in_region
    FROM deployments d WHERE d.id = ANY(${ids}::text[])`;
  return new Map(rows.map((r) => [r.id, r.inRegion]));
}
