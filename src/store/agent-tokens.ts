// agent_tokens: region-scoped bearer tokens for krane. Stored as SHA-256 hashes; the clear
// token is shown once, at creation.
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from './db';
import { newId } from '../ids';

export interface AgentToken {
  id: string;
  region: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** Creates a token for a region; returns the clear token (never stored) and its row id. */
export async function createAgentToken(q: Queryable, region: string): Promise<{ id: string; token: string }> {
  // 32 random bytes: unguessable, so a plain hash (no salt, no KDF) is safe to store.
  const token = `uka_${randomBytes(32).toString('base64url')}`;
  const id = newId('tok');
  await q`INSERT INTO agent_tokens (id, region, token_hash) VALUES (${id}, ${region}, ${hashToken(token)})`;
  return { id, token };
}

/** Registers a configured token (from --agent-tokens) idempotently. */
export async function ensureAgentToken(q: Queryable, region: string, token: string): Promise<void> {
  await q`INSERT INTO agent_tokens (id, region, token_hash) VALUES (${newId('tok')}, ${region}, ${hashToken(token)})
          ON CONFLICT (token_hash) DO UPDATE SET region = EXCLUDED.region, revoked_at = NULL`;
}

/** The region a token belongs to, or undefined for unknown or revoked tokens. */
export async function regionForToken(q: Queryable, token: string): Promise<string | undefined> {
  const [row] = await q<{ region: string }[]>`SELECT region FROM agent_tokens
                                             WHERE token_hash = ${hashToken(token)} AND revoked_at IS NULL`;
  return row?.region;
}

export async function revokeAgentToken(q: Queryable, id: string): Promise<boolean> {
  const r = await q`UPDATE agent_tokens SET revoked_at = now() WHERE id = ${id} AND revoked_at IS NULL`;
  return r.count === 1;
}
