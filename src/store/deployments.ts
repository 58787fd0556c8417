// The deployments table: what the user asked to run, and the workflow's view of its progress.
import type { Queryable, TxSql } from './db';
import { inTx } from './tx';
import { lockVersions, nextAutoVersion } from './versions';
import type { Scope } from './tenancy';
import { publishEvent } from './events';

export const DEPLOYMENT_STATUSES = ['pending', 'building', 'deploying', 'network', 'ready', 'failed', 'stopped', 'superseded', 'rolled_back'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];
export const DESIRED_STATES = ['running', 'stopped'] as const;
/**
 * Whether a deployment (or topology, sentinel, policy) should be running: the `desired_state`
 * column. Named RunState so it is not confused with the wire's DesiredState (the apply/delete
 * state a change-feed event carries, src/sync/wire).
 */
export type RunState = (typeof DESIRED_STATES)[number];

export interface NewDeployment extends Scope {
  id: string;
  image: string | null;
  buildContext: string | null;
  cpuMillicores: number;
  memoryMib: number;
  replicas: number;
  port: number;
  command: string[];
  env: Record<string, string>;
  regions: string[];
  /** Containers get a read-only root filesystem (absent: false). */
  readOnlyRootFilesystem?: boolean;
  rolledBackFrom?: string | null;
  /** W3C traceparent of the deployment's workflow span (null: tracing was off). */
  traceparent?: string | null;
  /** The strategy as the API accepted it (src/workflow/progressive/strategy.ts reads it); null: rolling. */
  strategy?: unknown;
  /** Unique within the environment (src/store/versions.ts); absent: the next `v<N>`. */
  version?: string | undefined;
  /** Replicas left to a HorizontalPodAutoscaler between these bounds; null: fixed `replicas`. */
  autoscaling?: Autoscaling | null;
}

export interface Autoscaling {
  minReplicas: number;
  maxReplicas: number;
  cpuUtilization: number;
}

export interface Deployment extends Omit<NewDeployment, 'version'> {
  /** null only for rows another writer made (sql/0016); ctrl gives every deployment one. */
  version: string | null;
  readOnlyRootFilesystem: boolean;
  status: DeploymentStatus;
  desiredState: RunState;
  error: string | null;
  rolledBackFrom: string | null;
  traceparent: string | null;
  /** An operator's promote or abort of the canary or blue-green in progress, not yet acted on. */
  trafficCommand: TrafficCommand | null;
  /** Moves with every accepted stop or start (sql/0009): a workflow that began under another
   *  generation must not overwrite the operator's later command. */
  desiredGeneration: number;
  autoscaling: Autoscaling | null;
  createdAt: Date;
  updatedAt: Date;
}

const columns = (q: Queryable) => q`
  id, workspace_id, project_id, app_id, environment_id, image, build_context, cpu_millicores,
  memory_mib, replicas, port, command, env, regions, read_only_root_filesystem, status, desired_state, error,
  rolled_back_from, traceparent, strategy, traffic_command, desired_generation::int AS desired_generation, version, autoscaling, created_at, updated_at`;

/** Inserts a deployment; without a version it takes its environment's next `v<N>` in the same
 *  transaction. A version already held fails with 23505 on VERSION_INDEX (versions.ts). */
export async function insertDeployment(q: Queryable, d: NewDeployment): Promise<Deployment> {
  return inTx(q, async (tx) => {
    if (d.version) await lockVersions(tx, d.environmentId);
    return insertRow(tx, { ...d, version: d.version ?? (await nextAutoVersion(tx, d.environmentId)) });
  });
}

async function insertRow(q: TxSql, d: NewDeployment): Promise<Deployment> {
  const [row] = await q<Deployment[]>`
    INSERT INTO deployments (id, workspace_id, project_id, app_id, environment_id, image, build_context,
                             cpu_millicores, memory_mib, replicas, port, command, env, regions, read_only_root_filesystem,
                             rolled_back_from, traceparent, strategy, version, autoscaling)
    VALUES (${d.id}, ${d.workspaceId}, ${d.projectId}, ${d.appId}, ${d.environmentId}, ${d.image}, ${d.buildContext},
            ${d.cpuMillicores}, ${d.memoryMib}, ${d.replicas}, ${d.port}, ${q.json(d.command)}, ${q.json(d.env)},
            ${d.regions}, ${d.readOnlyRootFilesystem ?? false}, ${d.rolledBackFrom ?? null}, ${d.traceparent ?? null},
            ${d.strategy == null ? null : q.json(d.strategy as never)}, ${d.version ?? null},
            ${d.autoscaling == null ? null : q.json(d.autoscaling as never)})
    RETURNING ${columns(q)}`;
  return row!;
}

export async function getDeployment(q: Queryable, id: string): Promise<Deployment | undefined> {
  const [row] = await q<Deployment[]>`SELECT ${columns(q)} FROM deployments WHERE id = ${id}`;
  return row;
}

export async function getDeploymentByVersion(q: Queryable, environmentId: string, version: string): Promise<Deployment | undefined> {
  const [row] = await q<Deployment[]>`SELECT ${columns(q)} FROM deployments WHERE environment_id = ${environmentId} AND version = ${version}`;
  return row;
}

export async function listDeployments(q: Queryable, environmentId: string, limit = 100): Promise<Deployment[]> {
  return q<Deployment[]>`SELECT ${columns(q)} FROM deployments WHERE environment_id = ${environmentId}
                         ORDER BY created_at DESC, id LIMIT ${limit}`;
}

/** Also publishes a `deployment.status` live event (delivered when the caller commits). */
export async function setDeploymentStatus(
  q: Queryable,
  id: string,
  status: DeploymentStatus,
  error: string | null = null,
): Promise<Deployment | undefined> {
  const [row] = await q<Deployment[]>`UPDATE deployments SET status = ${status}, error = ${error}, updated_at = now()
                                      WHERE id = ${id} RETURNING ${columns(q)}`;
  if (row) await publishEvent(q, { type: 'deployment.status', deploymentId: id, environmentId: row.environmentId, status, error });
  return row;
}

/** Also records the image a build produced, so later steps and rollbacks use the built image. */
export async function setDeploymentImage(q: Queryable, id: string, image: string): Promise<void> {
  await q`UPDATE deployments SET image = ${image}, updated_at = now() WHERE id = ${id}`;
}

export async function setDeploymentDesiredState(q: Queryable, id: string, desired: RunState): Promise<Deployment | undefined> {
  const [row] = await q<Deployment[]>`UPDATE deployments SET desired_state = ${desired}, updated_at = now()
                                      WHERE id = ${id} RETURNING ${columns(q)}`;
  return row;
}

/** An operator's stop or start, accepted: the desired state and a new generation (sql/0009). */
export async function commandDesiredState(q: Queryable, id: string, desired: RunState): Promise<Deployment | undefined> {
  const [row] = await q<Deployment[]>`UPDATE deployments SET desired_state = ${desired}, desired_generation = desired_generation + 1, updated_at = now()
                                      WHERE id = ${id} RETURNING ${columns(q)}`;
  return row;
}

export type TrafficCommand = 'promote' | 'abort';

/**
 * Records an operator's promote or abort for a canary or blue-green still walking; undefined
 * when there is none (a rolling one, or one finished). Only under its first
 * desired-state generation: any accepted stop ends the walk for good (a start after it brings
 * the instances back without walking), so a command then would be accepted and never acted on.
 */
export async function requestTrafficCommand(q: Queryable, id: string, command: TrafficCommand): Promise<{ id: string } | undefined> {
  const [row] = await q<{ id: string }[]>`
    UPDATE deployments SET traffic_command = ${command}, updated_at = now()
    WHERE id = ${id} AND strategy IS NOT NULL AND status IN ('pending', 'building', 'deploying', 'network') AND desired_generation = 0 RETURNING id`;
  return row;
}

/** Clears an acted-on (or moot) promote or abort. */
export async function clearTrafficCommand(q: Queryable, id: string): Promise<void> {
  await q`UPDATE deployments SET traffic_command = NULL WHERE id = ${id} AND traffic_command IS NOT NULL`;
}

export interface RegionProgress {
  region: string;
  desiredStatus: RunState;
  wanted: number;
  running: number;
  pending: number;
  failed: { podName: string; reason: string | null }[];
  /** The desired state krane could not apply in this region (apply_failures), if any. */
  applyFailure: { code: string; reason: string } | null;
  /** Seed 001's topology status, from krane's reports (TOPOLOGY_STATUS below). */
  status: TopologyStatus;
}

export const TOPOLOGY_STATUSES = ['starting', 'started', 'stopping', 'stopped'] as const;
export type TopologyStatus = (typeof TOPOLOGY_STATUSES)[number];

/**
 * Seed 001's topology status of one (deployment, region), from what krane reported, never from
 * what ctrl asked alone: running and all wanted instances reported running since the topology
 * last changed → started, else starting; stopped and krane still reports instances → stopping,
 * none left → stopped. `running` and `present` are the instance counts of deploymentProgress's
 * join (reports since the change while running; every row while stopped).
 */
const TOPOLOGY_STATUS = (q: Queryable, running: string, present: string) => q.unsafe(`
  CASE WHEN t.desired_status = 'running'
       THEN CASE WHEN ${running} >= t.replicas THEN 'started' ELSE 'starting' END
       ELSE CASE WHEN ${present} > 0 THEN 'stopping' ELSE 'stopped' END END`);

/**
 * Per region of a deployment: replicas wanted against instances reported running or failed,
 * counting, while the region should run, only reports since its topology last changed. An
 * older report is not evidence about the current desired state: after a stop and a start it
 * may describe a pod krane is about to delete, or a failure of the run before. krane reports a
 * deployment's pods again each time it applies its topology (src/modes/krane.ts), so a pod that
 * outlived the change is counted again. A stopped region counts every row: what is still there
 * (a stop krane could not carry out) is what an operator must see.
 */
export async function deploymentProgress(q: Queryable, id: string): Promise<RegionProgress[]> {
  const rows = await q<(Omit<RegionProgress, 'failed'> & { failed: RegionProgress['failed'] | null })[]>`
    SELECT t.region, t.desired_status, t.replicas AS wanted,
           (SELECT json_build_object('code', f.code, 'reason', f.reason) FROM apply_failures f
             WHERE f.resource_type = 'deployment_topology' AND f.resource_id = t.deployment_id AND f.region = t.region) AS apply_failure,
           count(i.pod_name) FILTER (WHERE i.status = 'running')::int AS running,
           count(i.pod_name) FILTER (WHERE i.status IN ('pending', 'creating'))::int AS pending,
           ${TOPOLOGY_STATUS(q, "count(i.pod_name) FILTER (WHERE i.status = 'running')", 'count(i.pod_name)')} AS status,
           json_agg(json_build_object('podName', i.pod_name, 'reason', i.reason) ORDER BY i.pod_name)
             FILTER (WHERE i.status = 'failed') AS failed
    FROM deployment_topology t
    JOIN deployments d ON d.id = t.deployment_id
    LEFT JOIN instances i ON i.deployment_id = t.deployment_id AND i.region = t.region
      AND (t.desired_status <> 'running' OR (i.updated_at >= t.updated_at AND (d.desired_generation = 0 OR i.generation = d.desired_generation)))
    WHERE t.deployment_id = ${id}
    GROUP BY t.deployment_id, t.region, t.desired_status, t.replicas
    ORDER BY t.region`;
  return rows.map((r) => ({ ...r, failed: r.failed ?? [] }));
}

/** Status and desired state of some deployments (those that exist), to decide which may serve traffic. */
export async function runStates(q: Queryable, ids: readonly string[]): Promise<Pick<Deployment, 'id' | 'status' | 'desiredState'>[]> {
  if (ids.length === 0) return [];
  return q<Pick<Deployment, 'id' | 'status' | 'desiredState'>[]>`SELECT id, status, desired_state FROM deployments WHERE id = ANY(${ids as string[]}::text[])`;
}

/** Locks a deployment row for the rest of the transaction (state transitions race otherwise). */
export async function lockDeployment(
  q: Queryable,
  id: string,
): Promise<Pick<Deployment, 'id' | 'status' | 'desiredState' | 'workspaceId' | 'environmentId' | 'trafficCommand' | 'desiredGeneration'> | undefined> {
  const [row] = await q<Pick<Deployment, 'id' | 'status' | 'desiredState' | 'workspaceId' | 'environmentId' | 'trafficCommand' | 'desiredGeneration'>[]>`
    SELECT id, status, desired_state, workspace_id, environment_id, traffic_command, desired_generation::int AS desired_generation
    FROM deployments WHERE id = ${id} FOR UPDATE`;
  return row;
}

/** Where a page of stalled deployments ended; the next page starts after it. */
export interface StalledCursor {
  /** updated_at as PostgreSQL prints it: microseconds kept (a Date would cut them to ms and
   *  could hand back the same rows forever). */
  updatedAt: string;
  id: string;
}

/** Deployments on their way (pending … network) whose row has not changed for `olderThanMs`:
 *  candidates for a workflow that never started or died; the caller checks for a live one.
 *  Oldest first, a page at a time (keyset on updated_at, id): a caller that skips the ones
 *  with a live workflow still reaches the rest. */
export async function listStalled(
  q: Queryable,
  olderThanMs: number,
  page: { after?: StalledCursor | null; limit?: number } = {},
): Promise<{ ids: string[]; next: StalledCursor | null }> {
  const limit = page.limit ?? 100;
  const after = page.after ?? null;
  const rows = await q<{ id: string; updatedAt: string }[]>`
    SELECT id, updated_at::text AS updated_at FROM deployments
    WHERE status IN ('pending', 'building', 'deploying', 'network')
      AND updated_at < now() - make_interval(secs => ${olderThanMs / 1000})
      AND (${after === null} OR (updated_at, id) > (${after?.updatedAt ?? null}::timestamptz, ${after?.id ?? null}::text))
    ORDER BY updated_at, id LIMIT ${limit}`;
  const last = rows.at(-1);
  return { ids: rows.map((r) => r.id), next: rows.length === limit && last ? { updatedAt: last.updatedAt, id: last.id } : null };
}

/** Fleet-wide counts for the metrics endpoint: instances by status, topologies by status. */
export async function fleetCounts(q: Queryable): Promise<{ instances: Record<string, number>; topologies: Record<string, number>; regions: number }> {
  const [row] = await q<{ instances: Record<string, number> | null; topologies: Record<string, number> | null; regions: number }[]>`
    SELECT (SELECT json_object_agg(status, n) FROM (SELECT status, count(*)::int AS n FROM instances GROUP BY status) i) AS instances,
           (SELECT json_object_agg(status, n) FROM (
              SELECT status, count(*)::int AS n FROM (
                SELECT ${TOPOLOGY_STATUS(q, 'c.running', 'c.present')} AS status
                FROM deployment_topology t, LATERAL (
                  SELECT count(*) FILTER (WHERE i.status = 'running' AND i.updated_at >= t.updated_at) AS running, count(*) AS present
                  FROM instances i WHERE i.deployment_id = t.deployment_id AND i.region = t.region) c) s
              GROUP BY status) t) AS topologies,
           (SELECT count(DISTINCT region)::int FROM deployment_topology WHERE desired_status = 'running') AS regions`;
  return { instances: row?.instances ?? {}, topologies: row?.topologies ?? {}, regions: row?.regions ?? 0 };
}

/** Status and desired state of many deployments in one query (status reports name many). */
export async function statesOf(q: Queryable, ids: string[]): Promise<Map<string, Pick<Deployment, 'status' | 'desiredState'>>> {
  if (ids.length === 0) return new Map();
  const rows = await q<{ id: string; status: DeploymentStatus; desiredState: RunState }[]>`
    SELECT d.id, d.status, d.desired_state FROM deployments d JOIN unnest(${ids}::text[]) AS x(id) ON x.id = d.id`;
  return new Map(rows.map((r) => [r.id, { status: r.status, desiredState: r.desiredState }]));
}
