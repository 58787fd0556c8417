// api_keys: scoped API keys for the public API (src/http/keys.ts authenticates them). Stored as
// SHA-256 hashes like agent tokens; the clear key (`uik_` + 32 random bytes) is shown once, at
// creation. A revocation is final and rings a doorbell (NOTIFY) so every ctrl replica forgets
// the key and closes its open WebSockets and calls at once. Keys form trees by created_by (a key
// made by a key): a revocation takes the whole subtree (issue 32), so nothing a key handed out
// outlives it.
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable, Sql, TxSql } from './db';
import { newId } from '../ids';

export interface ApiKey {
  id: string;
  name: string;
  workspaceId: string;
  projectId: string | null;
  environmentId: string | null;
  permissions: string[];
  expiresAt: Date | null;
  createdBy: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Prefix of every key: tells a key from an agent token (`uka_`) at a glance and to scanners. */
export const KEY_PREFIX = 'uik_';

/** LISTEN/NOTIFY channel carrying the id of each key as it is revoked. */
export const KEY_REVOKED_CHANNEL = 'unkey_infra_key_revoked';

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

const cols = (q: Queryable) => q`id, name, workspace_id, project_id, environment_id, permissions, expires_at, created_by, created_at, revoked_at`;

export async function createKey(
  q: Queryable,
  k: { name: string; workspaceId: string; projectId: string | null; environmentId: string | null; permissions: string[]; expiresAt: Date | null; createdBy: string },
): Promise<{ id: string; key: string; row: ApiKey }> {
  // 32 random bytes: unguessable, so a plain hash (no salt, no KDF) is safe to store.
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = newId('key');
  const [row] = await q<ApiKey[]>`
    INSERT INTO api_keys (id, name, key_hash, workspace_id, project_id, environment_id, permissions, expires_at, created_by)
    VALUES (${id}, ${k.name}, ${hashKey(key)}, ${k.workspaceId}, ${k.projectId}, ${k.environmentId}, ${k.permissions}, ${k.expiresAt}, ${k.createdBy})
    RETURNING ${cols(q)}`;
  return { id, key, row: row! };
}

/** The row of a clear key, revoked and expired ones included: the caller refuses those, and
 *  records the refusal under the key's id (issue 32: not as an anonymous caller). */
export async function lookupKey(q: Queryable, key: string): Promise<ApiKey | undefined> {
  const [row] = await q<ApiKey[]>`SELECT ${cols(q)} FROM api_keys WHERE key_hash = ${hashKey(key)}`;
  return row;
}

export async function getKey(q: Queryable, id: string): Promise<ApiKey | undefined> {
  const [row] = await q<ApiKey[]>`SELECT ${cols(q)} FROM api_keys WHERE id = ${id}`;
  return row;
}

/** Keys of a scope (all with null), newest first, without secrets (not even the hash). */
export async function listKeys(q: Queryable, scope: { workspaceId: string; projectId?: string | null; environmentId?: string | null } | null): Promise<ApiKey[]> {
  if (!scope) return q<ApiKey[]>`SELECT ${cols(q)} FROM api_keys ORDER BY created_at DESC, id LIMIT 1000`;
  return q<ApiKey[]>`SELECT ${cols(q)} FROM api_keys
                     WHERE workspace_id = ${scope.workspaceId}
                       AND (${scope.projectId ?? null}::text IS NULL OR project_id = ${scope.projectId ?? null})
                       AND (${scope.environmentId ?? null}::text IS NULL OR environment_id = ${scope.environmentId ?? null})
                     ORDER BY created_at DESC, id LIMIT 1000`;
}

/**
 * Revokes a live key and every live key below it (the keys it created, and theirs), notifying
 * every replica of each; `revoked` is false when the key itself was unknown or already revoked.
 * Hold the workspace's key lock (lockWorkspaceKeys) first, so no child is minted meanwhile.
 */
export async function revokeKey(q: Queryable, id: string): Promise<{ revoked: boolean; descendants: string[] }> {
  const rows = await q<{ id: string }[]>`
    WITH RECURSIVE tree AS (
      SELECT id FROM api_keys WHERE id = ${id}
      UNION
      SELECT k.id FROM api_keys k JOIN tree t ON k.created_by = t.id
    ),
    upd AS (UPDATE api_keys SET revoked_at = now() WHERE id IN (SELECT id FROM tree) AND revoked_at IS NULL RETURNING id)
    SELECT id, pg_notify(${KEY_REVOKED_CHANNEL}, id) FROM upd`;
  const ids = rows.map((r) => r.id);
  return { revoked: ids.includes(id), descendants: ids.filter((x) => x !== id) };
}

/**
 * Takes the workspace's key lock until the transaction ends: creations, revocations by id and
 * deletions of the workspace or its projects and environments (before their environment rows)
 * run one at a time. A key's children are always in its workspace, so a
 * revocation that holds it walks a tree no creation can add to before it commits, and a
 * creation that holds it sees whether its creator was revoked (a child committed between the
 * walk and the revocation's commit was once in no tree and outlived its creator). Advisory,
 * not the workspace's row: a deletion holds the workspace's environments and then updates its
 * row, and a creation holding the row while its insert waits for an environment would close a
 * deadlock. Each statement after it reads what committed before it was granted.
 */
export async function lockWorkspaceKeys(tx: TxSql, workspaceId: string): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(hashtext(${`api_keys:${workspaceId}`}))`;
}

/** Whether a key is live now (not revoked, not expired), read in the caller's transaction. */
export async function isLive(tx: TxSql, id: string): Promise<boolean> {
  const [row] = await tx<{ live: boolean }[]>`SELECT revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) AS live FROM api_keys WHERE id = ${id}`;
  return row?.live ?? false;
}

/**
 * Live keys of a workspace (not revoked, not expired), counted under the workspace's key lock,
 * so two creations at once cannot both pass a cap at its last place. Call in the creating
 * transaction.
 */
export async function countLiveKeysLocked(tx: TxSql, workspaceId: string): Promise<number> {
  await lockWorkspaceKeys(tx, workspaceId);
  const [row] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM api_keys
                                          WHERE workspace_id = ${workspaceId} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;
  return row!.n;
}

/** Revokes every live key of a workspace or a project (it is being deleted); returns their ids. */
export async function revokeKeysOf(tx: TxSql, of: { workspaceId: string } | { projectId: string }): Promise<string[]> {
  const ws = 'workspaceId' in of ? of.workspaceId : null;
  const prj = 'projectId' in of ? of.projectId : null;
  const rows = await tx<{ id: string }[]>`
    WITH upd AS (UPDATE api_keys SET revoked_at = now()
                 WHERE (${ws}::text IS NULL OR workspace_id = ${ws}) AND (${prj}::text IS NULL OR project_id = ${prj}) AND revoked_at IS NULL
                 RETURNING id)
    SELECT id, pg_notify(${KEY_REVOKED_CHANNEL}, id) FROM upd`;
  return rows.map((r) => r.id);
}

/** Revokes the live keys of one environment (it is being deleted); returns their ids. */
export async function revokeEnvironmentKeys(tx: TxSql, environmentId: string): Promise<string[]> {
  const rows = await tx<{ id: string }[]>`
    WITH upd AS (UPDATE api_keys SET revoked_at = now() WHERE environment_id = ${environmentId} AND revoked_at IS NULL RETURNING id)
    SELECT id, pg_notify(${KEY_REVOKED_CHANNEL}, id) FROM upd`;
  return rows.map((r) => r.id);
}

/** Ids of every revoked key (a listener that reconnected re-reads them: its NOTIFYs were lost). */
export async function revokedKeyIds(q: Queryable): Promise<string[]> {
  return (await q<{ id: string }[]>`SELECT id FROM api_keys WHERE revoked_at IS NOT NULL`).map((r) => r.id);
}

/**
 * Calls `onRevoked(id)` for each key revoked from now on, on any replica; `onReconnect` when the
 * LISTEN connection comes back (revocations sent meanwhile are lost). Resolves to the unlisten.
 */
export async function listenKeyRevocations(sql: Sql, onRevoked: (id: string) => void, onReconnect: () => void): Promise<() => Promise<void>> {
  let first = true;
  const l = await sql.listen(KEY_REVOKED_CHANNEL, onRevoked, () => {
    if (!first) onReconnect();
    first = false;
  });
  return () => l.unlisten();
}
