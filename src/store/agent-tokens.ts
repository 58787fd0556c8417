// agent_tokens: region-scoped bearer tokens for krane. Stored as SHA-256 hashes; the clear
// token is shown once, at creation. A revocation is final: nothing un-revokes a token (a
// configured token passed again in --agent-tokens stays revoked), and it rings a doorbell
// (NOTIFY) so every ctrl replica forgets the token and cuts its open streams at once.
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable, Sql } from './db';
import { newId } from '../ids';

export interface AgentToken {
  id: string;
  region: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/**
 * Shortest token accepted anywhere (configured, registered or presented): shorter ones can be
 * guessed over the network. Created tokens are far longer (32 random bytes).
 */
export const MIN_TOKEN_LENGTH = 16;

/** LISTEN/NOTIFY channel carrying the id of each token as it is revoked. */
export const REVOKED_CHANNEL = 'unkey_infra_token_revoked';

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

function assertLongEnough(token: string): void {
  if (token.length < MIN_TOKEN_LENGTH) throw new Error(`agent tokens must be at least ${MIN_TOKEN_LENGTH} characters`);
}

/** Creates a token for a region; returns the clear token (never stored) and its row id. */
export async function createAgentToken(q: Queryable, region: string): Promise<{ id: string; token: string }> {
  // 32 random bytes: unguessable, so a plain hash (no salt, no KDF) is safe to store.
  const token = `uka_${randomBytes(32).toString('base64url')}`;
  const id = newId('tok');
  await q`INSERT INTO agent_tokens (id, region, token_hash) VALUES (${id}, ${region}, ${hashToken(token)})`;
  return { id, token };
}

/**
 * Registers a configured token (from --agent-tokens) idempotently and returns its row. A token
 * already stored keeps its region and its revocation: the caller refuses a revoked one (and
 * says so), it never brings it back.
 */
export async function ensureAgentToken(q: Queryable, region: string, token: string): Promise<{ id: string; region: string; revoked: boolean }> {
  assertLongEnough(token);
  const hash = hashToken(token);
  await q`INSERT INTO agent_tokens (id, region, token_hash) VALUES (${newId('tok')}, ${region}, ${hash})
          ON CONFLICT (token_hash) DO NOTHING`;
  const [row] = await q<{ id: string; region: string; revoked: boolean }[]>`
    SELECT id, region, revoked_at IS NOT NULL AS revoked FROM agent_tokens WHERE token_hash = ${hash}`;
  return { id: row!.id, region: row!.region, revoked: row!.revoked };
}

/** The live (not revoked) token row of a clear token, or undefined. */
export async function lookupToken(q: Queryable, token: string): Promise<{ id: string; region: string } | undefined> {
  if (token.length < MIN_TOKEN_LENGTH) return undefined;
  const [row] = await q<{ id: string; region: string }[]>`
    SELECT id, region FROM agent_tokens WHERE token_hash = ${hashToken(token)} AND revoked_at IS NULL`;
  return row;
}

/** The region a token belongs to, or undefined for unknown, revoked or too short tokens. */
export async function regionForToken(q: Queryable, token: string): Promise<string | undefined> {
  return (await lookupToken(q, token))?.region;
}

/** Every token, newest first, without secrets (not even the hash). */
export async function listAgentTokens(q: Queryable): Promise<AgentToken[]> {
  return q<AgentToken[]>`SELECT id, region, created_at, revoked_at FROM agent_tokens ORDER BY created_at DESC, id`;
}

/** Whether a token row exists (revoked or not): the CLI tells "unknown" from "already revoked". */
export async function agentTokenExists(q: Queryable, id: string): Promise<boolean> {
  const [row] = await q`SELECT 1 FROM agent_tokens WHERE id = ${id}`;
  return !!row;
}

/** Revokes a live token and notifies every replica; false when unknown or already revoked. */
export async function revokeAgentToken(q: Queryable, id: string): Promise<boolean> {
  const r = await q`WITH upd AS (
                      UPDATE agent_tokens SET revoked_at = now() WHERE id = ${id} AND revoked_at IS NULL RETURNING id)
                    SELECT pg_notify(${REVOKED_CHANNEL}, id) FROM upd`;
  return r.count === 1;
}

/**
 * Calls `onRevoked(id)` for each token revoked from now on, on any replica. `onReconnect` runs
 * whenever the LISTEN connection comes back: revocations sent while it was down are lost, so
 * the caller must forget what it cached. Resolves to the function that stops listening.
 */
export async function listenRevocations(
  sql: Sql,
  onRevoked: (id: string) => void,
  onReconnect: () => void,
): Promise<() => Promise<void>> {
  let first = true;
  const l = await sql.listen(REVOKED_CHANNEL, onRevoked, () => {
    if (!first) onReconnect();
    first = false;
  });
  return () => l.unlisten();
}
