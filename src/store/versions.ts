// Versions of an environment's deployments (issue 25): each deployment has one, unique within
// its environment by a unique index (deployments_environment_version_key), so two concurrent
// creates naming the same version cannot both commit. Automatic versions `v<N>` come from a
// counter row per environment, bumped in the creating transaction: the row lock orders
// concurrent creates of one environment, and a number some explicit version already took is
// skipped. A row written by anything but ctrl may have no version (sql/0016).
import type { Queryable, TxSql } from './db';

/** The unique index behind "one version per environment"; a 23505 naming it is a repeat. */
export const VERSION_INDEX = 'deployments_environment_version_key';

export const isVersionTaken = (err: unknown): boolean =>
  (err as { code?: string; constraint_name?: string } | null)?.code === '23505' && (err as { constraint_name?: string }).constraint_name === VERSION_INDEX;

/** The next free `v<N>` of an environment; call inside the transaction that inserts it. */
export async function nextAutoVersion(tx: TxSql, environmentId: string): Promise<string> {
  for (;;) {
    const [row] = await tx<{ lastNumber: string }[]>`
      INSERT INTO environment_version_counters (environment_id, last_number) VALUES (${environmentId}, 1)
      ON CONFLICT (environment_id) DO UPDATE SET last_number = environment_version_counters.last_number + 1
      RETURNING last_number`;
    const version = `v${row!.lastNumber}`;
    if (!(await versionHolder(tx, environmentId, version))) return version;
  }
}

/**
 * Takes the environment's counter row lock without moving it: a create naming its version
 * waits for a concurrent automatic one (and the other way round), so the automatic one's
 * check of who holds `v<N>` sees a named `v<N>` that committed first, and never loses the
 * unique index to it (that would answer 500, not the 409 a named repeat gets).
 */
export async function lockVersions(tx: TxSql, environmentId: string): Promise<void> {
  await tx`
    INSERT INTO environment_version_counters (environment_id, last_number) VALUES (${environmentId}, 0)
    ON CONFLICT (environment_id) DO UPDATE SET last_number = environment_version_counters.last_number`;
}

/** The deployment holding a version in an environment, if any. */
export async function versionHolder(q: Queryable, environmentId: string, version: string): Promise<{ id: string } | undefined> {
  const [row] = await q<{ id: string }[]>`SELECT id FROM deployments WHERE environment_id = ${environmentId} AND version = ${version}`;
  return row;
}

export interface VersionRow {
  version: string;
  deploymentId: string;
  image: string | null;
  /** A DeploymentStatus (deployments.ts, which imports this module: named here as text). */
  status: string;
  createdAt: Date;
  /** The deployment this one re-deployed (a rollback), with its version. */
  rollbackOf: { deploymentId: string; version: string } | null;
  /** Rollbacks that re-deployed this version, oldest first. */
  rolledBackBy: { deploymentId: string; version: string; createdAt: string }[];
}

/** An environment's history, newest first. */
export async function listVersions(q: Queryable, environmentId: string, limit = 100): Promise<VersionRow[]> {
  return q<VersionRow[]>`
    SELECT d.version, d.id AS deployment_id, d.image, d.status, d.created_at,
           CASE WHEN s.id IS NULL THEN NULL ELSE json_build_object('deploymentId', s.id, 'version', s.version) END AS rollback_of,
           COALESCE((SELECT json_agg(json_build_object('deploymentId', r.id, 'version', r.version, 'createdAt', r.created_at) ORDER BY r.created_at)
                     FROM deployments r WHERE r.rolled_back_from = d.id), '[]'::json) AS rolled_back_by
    FROM deployments d LEFT JOIN deployments s ON s.id = d.rolled_back_from
    WHERE d.environment_id = ${environmentId}
    ORDER BY d.created_at DESC, d.id LIMIT ${limit}`;
}
