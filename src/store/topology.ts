// deployment_topology: one row per deployment per region, the desired state krane applies.
// Every write here records a deployment_changes row in the same transaction (see changes.ts);
// stops are state changes (desired_status = stopped), never row deletions, so the feed can
// tell krane to delete and a later full sync still knows the resource existed.
import type { Queryable } from './db';
import { recordChange } from './changes';
import { inTx } from './tx';
import type { RunState } from './deployments';

export interface Topology {
  deploymentId: string;
  region: string;
  workspaceId: string;
  replicas: number;
  desiredStatus: RunState;
  createdAt: Date;
  updatedAt: Date;
}

/** Creates or updates the row; idempotent, so a retried workflow step writes the same state. */
export async function upsertTopology(
  q: Queryable,
  t: { deploymentId: string; region: string; workspaceId: string; replicas: number; desiredStatus?: RunState },
): Promise<Topology> {
  return inTx(q, async (tx) => {
    const [row] = await tx<Topology[]>`
      INSERT INTO deployment_topology (deployment_id, region, workspace_id, replicas, desired_status)
      VALUES (${t.deploymentId}, ${t.region}, ${t.workspaceId}, ${t.replicas}, ${t.desiredStatus ?? 'running'})
      ON CONFLICT (deployment_id, region) DO UPDATE
        SET replicas = EXCLUDED.replicas, desired_status = EXCLUDED.desired_status, updated_at = now()
      RETURNING *`;
    await recordChange(tx, 'deployment_topology', t.deploymentId, t.region);
    return row!;
  });
}

/** Sets the desired status of every region of a deployment; returns the rows changed. */
export async function setTopologyStatus(q: Queryable, deploymentId: string, status: RunState): Promise<Topology[]> {
  return inTx(q, async (tx) => {
    const rows = await tx<Topology[]>`
      UPDATE deployment_topology SET desired_status = ${status}, updated_at = now()
      WHERE deployment_id = ${deploymentId} RETURNING *`;
    for (const r of rows) await recordChange(tx, 'deployment_topology', deploymentId, r.region);
    return rows;
  });
}

export async function getTopology(q: Queryable, deploymentId: string, region: string): Promise<Topology | undefined> {
  const [row] = await q<Topology[]>`SELECT * FROM deployment_topology WHERE deployment_id = ${deploymentId} AND region = ${region}`;
  return row;
}

export async function listTopology(q: Queryable, deploymentId: string): Promise<Topology[]> {
  return q<Topology[]>`SELECT * FROM deployment_topology WHERE deployment_id = ${deploymentId} ORDER BY region`;
}
