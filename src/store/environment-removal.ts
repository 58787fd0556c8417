// Removing an environment's running parts (and freeing its hostnames): a composition over the tables that hold them, kept
// apart from tenancy.ts because sentinels.ts and cilium.ts import tenancy's types (a module of
// tenancy calling them would be a cycle).
import type { Queryable } from './db';
import { deleteEnvironmentSentinels } from './sentinels';
import { deleteEnvironmentPolicies } from './cilium';
import { clearRoutes, getRoutes } from './routes';
import { inTx } from './tx';
import { releaseEnvironment } from './hostname-claims';

/**
 * Removes what an environment runs in the clusters and marks it deleted, in the caller's
 * transaction: sentinel and gossip-policy rows go, each with its outbox row (krane, finding no
 * desired state, deletes the objects), and the routing table is emptied (its regions delete the
 * ConfigMap). Returns what was removed, for the caller's answer.
 */
export async function removeEnvironment(q: Queryable, id: string, hostname: string): Promise<{ sentinels: number; policies: number }> {
  return inTx(q, async (tx) => {
    const snts = await deleteEnvironmentSentinels(tx, id);
    const pols = await deleteEnvironmentPolicies(tx, id);
    const table = await getRoutes(tx, id);
    if (table && table.regions.length > 0) await clearRoutes(tx, { environmentId: id, workspaceId: table.workspaceId, hostname });
    // Its hostnames are free for another environment (domains are rows only: nothing to tell
    // krane); the domains go first, since each references its name's claim.
    await tx`DELETE FROM domains WHERE environment_id = ${id}`;
    await releaseEnvironment(tx, id);
    await tx`UPDATE environments SET deleted_at = now() WHERE id = ${id}`;
    return { sentinels: snts.length, policies: pols.length };
  });
}

