// Bearer-token auth. The admin token guards the public API; agent tokens (one region each)
// guard /v1/cluster/*. Comparisons hash both sides first, so timingSafeEqual sees equal lengths
// and the time taken says nothing about the token. Tokens are never logged (see log.ts redact).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { forbidden, unauthorized } from '../errors';
import { agentTokens, type Sql } from '../store';

declare module 'fastify' {
  interface FastifyRequest {
    /** Region of the authenticated agent token (cluster API only). */
    agentRegion?: string;
  }
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export function tokensEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export function bearerToken(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}

export function adminAuth(adminToken: string) {
  return async (req: FastifyRequest): Promise<void> => {
    const token = bearerToken(req);
    if (!token) throw unauthorized();
    if (!tokensEqual(token, adminToken)) throw unauthorized('invalid admin token');
  };
}

/**
 * How long a verified agent token is trusted without asking the database again. Every long
 * poll re-authenticates; caching keeps 1,000 agents from costing 1,000 lookups per wait cycle,
 * at the price of a revocation taking up to this long to bite.
 */
const AGENT_TOKEN_CACHE_MS = 30_000;

export function agentAuth(sql: Sql, configured: Record<string, string> = {}) {
  const configuredList = Object.entries(configured);
  const cache = new Map<string, { region: string; until: number }>();
  return async (req: FastifyRequest): Promise<void> => {
    const token = bearerToken(req);
    if (!token) throw unauthorized();
    let region: string | undefined;
    for (const [r, t] of configuredList) if (tokensEqual(token, t)) region = r;
    if (!region) {
      const key = agentTokens.hashToken(token);
      const hit = cache.get(key);
      if (hit && hit.until > Date.now()) region = hit.region;
      else {
        region = await agentTokens.regionForToken(sql, token);
        if (region) cache.set(key, { region, until: Date.now() + AGENT_TOKEN_CACHE_MS });
      }
    }
    if (!region) throw unauthorized('invalid agent token');
    req.agentRegion = region;
  };
}

/** Throws 403 unless the authenticated agent serves `region`. */
export function assertAgentRegion(req: FastifyRequest, region: string): void {
  if (req.agentRegion !== region) {
    throw forbidden(`agent token of region ${req.agentRegion ?? '(none)'} cannot access region ${region}`);
  }
}
