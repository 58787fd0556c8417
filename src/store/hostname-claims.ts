// hostname_claims: one owner per hostname (issue 32). Each name an environment or a deployment
// is reached on is claimed by one environment (the apex by the platform), and the primary key
// makes a second claim impossible whatever the order of writes: two environments created at
// once with one name meet at the key, and the second is refused. Claims are made when the name
// comes into being (an environment's name at its creation, a deployment's at its creation) and
// by the domain write for a name it finds unclaimed (rows from before the table); they go with
// the environment (environment-removal.ts). A refusal is ERR_HOSTNAME_TAKEN, the same answer
// whoever holds the name.
import { AppError } from '../errors';
import type { Queryable } from './db';

export type ClaimKind = 'environment' | 'deployment';

export interface Claim {
  hostname: string;
  kind: ClaimKind | 'platform';
  workspaceId: string | null;
  environmentId: string | null;
  deploymentId: string | null;
  createdAt: Date;
}

export const hostnameTaken = (hostname: string) => new AppError('ERR_HOSTNAME_TAKEN', `hostname ${hostname} is taken; choose another`);

/**
 * Claims `hostname` for an environment (kind `environment`) or one of its deployments (kind
 * `deployment`, with its id). Idempotent for the same environment; throws ERR_HOSTNAME_TAKEN when
 * another environment, or the platform, holds it. A concurrent claim of the same name waits for
 * the first writer's transaction and then sees its outcome.
 */
export async function claimHostname(q: Queryable, c: { hostname: string; kind: ClaimKind; workspaceId: string; environmentId: string; deploymentId?: string | null }): Promise<void> {
  const inserted = await q`
    INSERT INTO hostname_claims (hostname, kind, workspace_id, environment_id, deployment_id)
    VALUES (${c.hostname}, ${c.kind}, ${c.workspaceId}, ${c.environmentId}, ${c.kind === 'deployment' ? (c.deploymentId ?? null) : null})
    ON CONFLICT (hostname) DO NOTHING RETURNING hostname`;
  if (inserted.length === 1) return;
  const owner = await ownerOf(q, c.hostname);
  if (owner?.environmentId !== c.environmentId) throw hostnameTaken(c.hostname);
}

/** The platform's own name (the apex): no environment may claim it. False when an environment
 *  already did (before claims existed); the caller says so. */
export async function claimPlatformHostname(q: Queryable, hostname: string): Promise<boolean> {
  await q`INSERT INTO hostname_claims (hostname, kind) VALUES (${hostname}, 'platform') ON CONFLICT (hostname) DO NOTHING`;
  return (await ownerOf(q, hostname))?.kind === 'platform';
}

export async function ownerOf(q: Queryable, hostname: string): Promise<Claim | undefined> {
  const [row] = await q<Claim[]>`SELECT hostname, kind, workspace_id, environment_id, deployment_id, created_at FROM hostname_claims WHERE hostname = ${hostname}`;
  return row;
}

/** Every name an environment holds (its own and its deployments'), for its deletion. */
export async function releaseEnvironment(q: Queryable, environmentId: string): Promise<number> {
  return (await q`DELETE FROM hostname_claims WHERE environment_id = ${environmentId}`).count;
}
