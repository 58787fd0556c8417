// sentinels: one proxy per environment per region. Desired fields are written by workflows
// (each write records a deployment_changes row in the same transaction); observed fields are
// written by krane's status reports and do not touch the feed, since krane has nothing to apply.
import type { Queryable } from './db';
import { recordChange } from './changes';
import { inTx } from './tx';
import type { Scope } from './tenancy';
import type { RunState } from './deployments';

export const SENTINEL_HEALTH = ['unknown', 'healthy', 'unhealthy'] as const;
export type SentinelHealth = (typeof SENTINEL_HEALTH)[number];
export const SENTINEL_DEPLOY_STATUSES = ['idle', 'progressing', 'ready', 'failed'] as const;
export type SentinelDeployStatus = (typeof SENTINEL_DEPLOY_STATUSES)[number];

export interface SentinelDesired {
  image: string;
  replicas: number;
  cpuMillicores: number;
  memoryMib: number;
  desiredState: RunState;
}

export interface SentinelObserved {
  availableReplicas: number;
  updatedReplicas: number;
  readyReplicas: number;
  observedGeneration: number;
  runningImage: string | null;
  health: SentinelHealth;
  /** sentinelSpecHash of the spec krane last saw fully rolled out; null until it reports one. */
  observedSpecHash: string | null;
  /** krane's observation time (ms, its wall clock), for display only; null when not known. */
  observedAt?: number | null | undefined;
  /**
   * The report's { leaseEpoch, seq } (sql/0027): a report older than the one the row holds is
   * ignored. Absent: applied as it comes (an older krane, or one without leader election).
   */
  order?: { epoch: number; seq: number } | undefined;
}

export interface Sentinel extends Scope, SentinelDesired, SentinelObserved {
  id: string;
  region: string;
  deployStatus: SentinelDeployStatus;
  createdAt: Date;
  updatedAt: Date;
}

// observed_generation is bigint; a Kubernetes generation fits a JS number for any real object.
const columns = (q: Queryable) => q`
  id, workspace_id, project_id, app_id, environment_id, region, image, replicas, cpu_millicores, memory_mib,
  desired_state, available_replicas, updated_replicas, ready_replicas, observed_generation::float8 AS observed_generation,
  running_image, health, observed_spec_hash, deploy_status, created_at, updated_at`;

/**
 * Inserts the sentinel of an environment and region unless one exists; returns the row that is
 * there afterwards. Only a real insert records a change, so concurrent deploys can call it freely.
 */
export async function ensureSentinel(
  q: Queryable,
  s: Scope & { id: string; region: string } & Omit<SentinelDesired, 'desiredState'>,
): Promise<{ sentinel: Sentinel; created: boolean }> {
  return inTx(q, async (tx) => {
    const [inserted] = await tx<Sentinel[]>`
      INSERT INTO sentinels (id, workspace_id, project_id, app_id, environment_id, region, image, replicas, cpu_millicores, memory_mib)
      VALUES (${s.id}, ${s.workspaceId}, ${s.projectId}, ${s.appId}, ${s.environmentId}, ${s.region}, ${s.image},
              ${s.replicas}, ${s.cpuMillicores}, ${s.memoryMib})
      ON CONFLICT (environment_id, region) DO NOTHING
      RETURNING ${columns(tx)}`;
    if (inserted) {
      await recordChange(tx, 'sentinel', inserted.id, inserted.region);
      return { sentinel: inserted, created: true };
    }
    const [existing] = await tx<Sentinel[]>`SELECT ${columns(tx)} FROM sentinels
                                            WHERE environment_id = ${s.environmentId} AND region = ${s.region}`;
    return { sentinel: existing!, created: false };
  });
}

/**
 * Writes new desired fields and a deploy status in one transaction with the change row. A
 * changed spec resets the observed spec hash: what krane reported was about the old one.
 */
export async function updateSentinelDesired(
  q: Queryable,
  id: string,
  d: SentinelDesired,
  deployStatus: SentinelDeployStatus,
): Promise<Sentinel | undefined> {
  return inTx(q, async (tx) => {
    const [row] = await tx<Sentinel[]>`
      UPDATE sentinels SET image = ${d.image}, replicas = ${d.replicas}, cpu_millicores = ${d.cpuMillicores},
             memory_mib = ${d.memoryMib}, desired_state = ${d.desiredState}, deploy_status = ${deployStatus}, updated_at = now(),
             observed_spec_hash = CASE WHEN (image, replicas, cpu_millicores, memory_mib)
                                          = (${d.image}, ${d.replicas}::int, ${d.cpuMillicores}::int, ${d.memoryMib}::int)
                                       THEN observed_spec_hash END
      WHERE id = ${id} RETURNING ${columns(tx)}`;
    if (row) await recordChange(tx, 'sentinel', row.id, row.region);
    return row;
  });
}

export async function setSentinelDeployStatus(q: Queryable, id: string, status: SentinelDeployStatus): Promise<void> {
  await q`UPDATE sentinels SET deploy_status = ${status}, updated_at = now() WHERE id = ${id}`;
}

/**
 * Records what krane saw, unless the row holds a report of a later { leaseEpoch, seq } (then the
 * row is left as it is and undefined returned). Scoped by region so an agent can only write its
 * own region's rows.
 */
export async function updateSentinelObserved(q: Queryable, id: string, region: string, o: SentinelObserved): Promise<Sentinel | undefined> {
  const epoch = o.order?.epoch ?? null;
  const seq = o.order?.seq ?? null;
  const [row] = await q<Sentinel[]>`
    UPDATE sentinels SET available_replicas = ${o.availableReplicas}, updated_replicas = ${o.updatedReplicas},
           ready_replicas = ${o.readyReplicas}, observed_generation = ${o.observedGeneration},
           running_image = ${o.runningImage}, health = ${o.health}, observed_spec_hash = ${o.observedSpecHash},
           observed_at = ${o.observedAt ?? null}::float8,
           report_epoch = COALESCE(${epoch}::int, report_epoch),
           report_seq = CASE WHEN ${epoch}::int IS NULL THEN report_seq ELSE ${seq}::bigint END,
           updated_at = now()
    WHERE id = ${id} AND region = ${region}
      -- An older report that arrives late keeps the newer one (sql/0027); equal is a retry.
      AND (${epoch}::int IS NULL OR report_epoch IS NULL OR (report_epoch, report_seq) <= (${epoch}::int, ${seq}::bigint))
    RETURNING ${columns(q)}`;
  return row;
}

export async function getSentinel(q: Queryable, id: string): Promise<Sentinel | undefined> {
  const [row] = await q<Sentinel[]>`SELECT ${columns(q)} FROM sentinels WHERE id = ${id}`;
  return row;
}

/** Keyset-paged list ordered by id; pass the last id seen as `after`. */
export async function listSentinels(
  q: Queryable,
  opts: { region?: string; environmentId?: string; desiredState?: RunState; after?: string; limit?: number; scope?: { workspaceId: string; projectId: string | null } | null } = {},
): Promise<Sentinel[]> {
  const ws = opts.scope?.workspaceId ?? null;
  const prj = opts.scope?.projectId ?? null;
  return q<Sentinel[]>`
    SELECT ${columns(q)} FROM sentinels
    WHERE (${opts.region ?? null}::text IS NULL OR region = ${opts.region ?? null})
      AND (${ws}::text IS NULL OR workspace_id = ${ws})
      AND (${prj}::text IS NULL OR project_id = ${prj})
      AND (${opts.environmentId ?? null}::text IS NULL OR environment_id = ${opts.environmentId ?? null})
      AND (${opts.desiredState ?? null}::text IS NULL OR desired_state = ${opts.desiredState ?? null})
      AND id > ${opts.after ?? ''}
    ORDER BY id LIMIT ${opts.limit ?? 500}`;
}

/** Region of each existing sentinel among `ids`; ids absent from the result do not exist. */
export async function sentinelRegions(q: Queryable, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await q<{ id: string; region: string }[]>`SELECT id, region FROM sentinels WHERE id = ANY(${ids}::text[])`;
  return new Map(rows.map((r) => [r.id, r.region]));
}

/**
 * Records that krane could not apply the sentinel's desired state (the API server refused it):
 * health becomes unhealthy, and a deploy waiting on it (`progressing`) becomes `failed` at once
 * instead of running into its timeout. Other deploy states are left alone.
 */
export async function markSentinelApplyFailed(q: Queryable, id: string, region: string): Promise<boolean> {
  const r = await q`
    UPDATE sentinels SET health = 'unhealthy',
           deploy_status = CASE WHEN deploy_status = 'progressing' THEN 'failed' ELSE deploy_status END, updated_at = now()
    WHERE id = ${id} AND region = ${region}`;
  return r.count > 0;
}

/** Many sentinels in one query (status reports name many). */
export async function getSentinels(q: Queryable, ids: string[]): Promise<Sentinel[]> {
  if (ids.length === 0) return [];
  return q<Sentinel[]>`SELECT ${columns(q)} FROM sentinels WHERE id IN (SELECT unnest(${ids}::text[]))`;
}

/** Deletes an environment's sentinels, each with its outbox row (krane then deletes the objects). */
export async function deleteEnvironmentSentinels(q: Queryable, environmentId: string): Promise<{ id: string; region: string }[]> {
  return inTx(q, async (tx) => {
    const rows = await tx<{ id: string; region: string }[]>`DELETE FROM sentinels WHERE environment_id = ${environmentId} RETURNING id, region`;
    for (const s of rows) await recordChange(tx, 'sentinel', s.id, s.region);
    return rows;
  });
}
