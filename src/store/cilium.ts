// cilium_network_policies: the per-environment, per-region policy that lets an environment's
// sentinel pods gossip. Writes record a deployment_changes row in the same transaction.
import type { Queryable } from './db';
import { recordChange } from './changes';
import { inTx } from './tx';
import type { Scope } from './tenancy';
import type { RunState } from './deployments';

export interface CiliumPolicy extends Scope {
  id: string;
  region: string;
  desiredState: RunState;
  createdAt: Date;
  updatedAt: Date;
}

/** Inserts the policy of an environment and region unless present; a no-op records nothing. */
export async function ensureCiliumPolicy(
  q: Queryable,
  p: Scope & { id: string; region: string },
): Promise<{ policy: CiliumPolicy; created: boolean }> {
  return inTx(q, async (tx) => {
    const [inserted] = await tx<CiliumPolicy[]>`
      INSERT INTO cilium_network_policies (id, workspace_id, project_id, app_id, environment_id, region)
      VALUES (${p.id}, ${p.workspaceId}, ${p.projectId}, ${p.appId}, ${p.environmentId}, ${p.region})
      ON CONFLICT (environment_id, region) DO NOTHING RETURNING *`;
    if (inserted) {
      await recordChange(tx, 'cilium_network_policy', inserted.id, inserted.region);
      return { policy: inserted, created: true };
    }
    const [existing] = await tx<CiliumPolicy[]>`SELECT * FROM cilium_network_policies
                                                WHERE environment_id = ${p.environmentId} AND region = ${p.region}`;
    return { policy: existing!, created: false };
  });
}

export async function setCiliumPolicyState(q: Queryable, id: string, desired: RunState): Promise<CiliumPolicy | undefined> {
  return inTx(q, async (tx) => {
    const [row] = await tx<CiliumPolicy[]>`UPDATE cilium_network_policies SET desired_state = ${desired}, updated_at = now()
                                           WHERE id = ${id} RETURNING *`;
    if (row) await recordChange(tx, 'cilium_network_policy', row.id, row.region);
    return row;
  });
}

export async function getCiliumPolicy(q: Queryable, id: string): Promise<CiliumPolicy | undefined> {
  const [row] = await q<CiliumPolicy[]>`SELECT * FROM cilium_network_policies WHERE id = ${id}`;
  return row;
}

/** Deletes an environment's gossip policies, each with its outbox row (krane then deletes the objects). */
export async function deleteEnvironmentPolicies(q: Queryable, environmentId: string): Promise<{ id: string; region: string }[]> {
  return inTx(q, async (tx) => {
    const rows = await tx<{ id: string; region: string }[]>`DELETE FROM cilium_network_policies WHERE environment_id = ${environmentId} RETURNING id, region`;
    for (const p of rows) await recordChange(tx, 'cilium_network_policy', p.id, p.region);
    return rows;
  });
}
