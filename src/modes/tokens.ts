// `unkey-infra ctrl tokens create --region R`: mints an agent token for one region. The clear
// token is printed once and only its hash is stored, so a lost token is replaced, not recovered.
import type { TokensConfig } from '../config';
import { agentTokens, createDb } from '../store';

export async function createTokenCommand(cfg: TokensConfig): Promise<{ id: string; token: string }> {
  const sql = createDb(cfg.databaseUrl, { max: 1, applicationName: 'unkey-infra-tokens' });
  try {
    return await agentTokens.createAgentToken(sql, cfg.region);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
