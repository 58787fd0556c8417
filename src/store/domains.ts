// domains: hostnames routed to a deployment. Environment domains move on promote/rollback;
// deployment domains stay pinned to the deployment they were made for. A domain row belongs to
// the environment that claimed its name (hostname-claims.ts; the foreign key on (hostname,
// environment) holds it): a write moves a name between deployments of one environment, never
// to another environment.
import type { Queryable } from './db';
import { claimHostname, hostnameTaken } from './hostname-claims';
import { inTx } from './tx';

export interface Domain {
  hostname: string;
  workspaceId: string;
  environmentId: string;
  deploymentId: string;
  kind: 'environment' | 'deployment';
  createdAt: Date;
  updatedAt: Date;
}

/**
 * Points a hostname at a deployment of the environment that owns the name, creating the domain if
 * new (and claiming the name if nobody had: rows from before claims). Idempotent. Throws
 * ERR_HOSTNAME_TAKEN when another environment owns the name: the row is left as it was.
 */
export async function assignDomain(
  q: Queryable,
  d: { hostname: string; workspaceId: string; environmentId: string; deploymentId: string; kind: Domain['kind'] },
): Promise<Domain> {
  return inTx(q, async (tx) => {
    await claimHostname(tx, { hostname: d.hostname, kind: d.kind, workspaceId: d.workspaceId, environmentId: d.environmentId, deploymentId: d.deploymentId });
    const [row] = await tx<Domain[]>`
      INSERT INTO domains (hostname, workspace_id, environment_id, deployment_id, kind)
      VALUES (${d.hostname}, ${d.workspaceId}, ${d.environmentId}, ${d.deploymentId}, ${d.kind})
      ON CONFLICT (hostname) DO UPDATE SET deployment_id = EXCLUDED.deployment_id, updated_at = now()
        WHERE domains.environment_id = EXCLUDED.environment_id
      RETURNING *`;
    if (!row) throw hostnameTaken(d.hostname);
    return row;
  });
}

/** Moves every environment domain of an environment to `deploymentId`; returns how many moved. */
export async function pointEnvironmentDomains(q: Queryable, environmentId: string, deploymentId: string): Promise<number> {
  const r = await q`UPDATE domains SET deployment_id = ${deploymentId}, updated_at = now()
                    WHERE environment_id = ${environmentId} AND kind = 'environment' AND deployment_id <> ${deploymentId}`;
  return r.count;
}

export async function listDomains(q: Queryable, opts: { deploymentId?: string; environmentId?: string }): Promise<Domain[]> {
  return q<Domain[]>`SELECT * FROM domains
                     WHERE (${opts.deploymentId ?? null}::text IS NULL OR deployment_id = ${opts.deploymentId ?? null})
                       AND (${opts.environmentId ?? null}::text IS NULL OR environment_id = ${opts.environmentId ?? null})
                     ORDER BY hostname`;
}

/** The deployment a hostname points at, with what decides whether a newer deploy may take it. */
export async function holderOf(q: Queryable, hostname: string): Promise<{ deploymentId: string; status: string; createdAt: Date } | undefined> {
  const [row] = await q<{ deploymentId: string; status: string; createdAt: Date }[]>`
    SELECT d.id AS deployment_id, d.status, d.created_at FROM domains x JOIN deployments d ON d.id = x.deployment_id
    WHERE x.hostname = ${hostname}`;
  return row;
}
