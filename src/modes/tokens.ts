// Operator commands on agent tokens and the feed, each a short database session:
// - `ctrl tokens create --region R` mints a token for one region. The clear token is printed
//   once and only its hash is stored, so a lost token is replaced, not recovered.
// - `ctrl tokens ls` lists ids, regions and dates (never a token or its hash).
// - `ctrl tokens revoke ID` revokes for good; every ctrl replica cuts the token's streams.
// - `ctrl feed rotate-epoch` starts a new feed timeline after a restore from backup: every
//   agent's cursor gets 410 and the agent does one full sync.
import type { DbCommandConfig, TokensConfig } from '../config';
import { agentTokens, audit, createDb, system, withTx, type Queryable, type Sql } from '../store';
import { userInfo } from 'node:os';

async function withDb<T>(databaseUrl: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = createDb(databaseUrl, { max: 1, applicationName: 'unkey-infra-admin' });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * The audit row of an operator command, in the command's transaction. The operator holds the
 * database itself (no token to name), so the actor is `admin` with the OS user running it.
 */
function auditCommand(q: Queryable, action: string, target: string): Promise<string> {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (a container's arbitrary uid): the row still says it was the CLI.
  }
  return audit.insertAudit(q, {
    actorType: 'admin', actorId: `cli:${user}`, action, target, outcome: 'ok',
    requestId: null, traceId: null, sourceIp: null, workspaceId: null, projectId: null, environmentId: null,
  });
}

export function createTokenCommand(cfg: TokensConfig): Promise<{ id: string; token: string }> {
  return withDb(cfg.databaseUrl, (sql) =>
    withTx(sql, async (tx) => {
      const t = await agentTokens.createAgentToken(tx, cfg.region);
      await auditCommand(tx, 'agent-token.create', t.id);
      return t;
    }),
  );
}

export function listTokensCommand(cfg: DbCommandConfig): Promise<agentTokens.AgentToken[]> {
  return withDb(cfg.databaseUrl, (sql) => agentTokens.listAgentTokens(sql));
}

/** 'revoked' now, 'already' revoked before, or 'unknown' id. */
export function revokeTokenCommand(cfg: DbCommandConfig, id: string): Promise<'revoked' | 'already' | 'unknown'> {
  return withDb(cfg.databaseUrl, async (sql) => {
    const revoked = await withTx(sql, async (tx) => (await agentTokens.revokeAgentToken(tx, id)) && (await auditCommand(tx, 'agent-token.revoke', id), true));
    if (revoked) return 'revoked';
    return (await agentTokens.agentTokenExists(sql, id)) ? 'already' : 'unknown';
  });
}

/** Returns the new epoch. */
export function rotateEpochCommand(cfg: DbCommandConfig): Promise<string> {
  return withDb(cfg.databaseUrl, (sql) => system.rotateFeedEpoch(sql));
}

/** `tokens ls` as a table: ID REGION CREATED REVOKED (ISO times, `-` when live). */
export function formatTokenTable(list: agentTokens.AgentToken[]): string {
  const rows = [['ID', 'REGION', 'CREATED', 'REVOKED'], ...list.map((t) => [t.id, t.region, t.createdAt.toISOString(), t.revokedAt?.toISOString() ?? '-'])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}
