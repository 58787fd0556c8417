// Bearer-token auth. The admin token guards the public API; agent tokens (one region each)
// guard /v1/cluster/*. Both run as onRequest hooks, before fastify reads or parses a body, so
// an unauthenticated client costs a header parse and nothing more. Comparisons hash both sides
// first, so timingSafeEqual sees equal lengths and the time taken says nothing about the token.
// Tokens are never logged (see log.ts redact); token ids are.
//
// AgentAuth keeps what it learnt: valid tokens for a while (every long poll re-authenticates),
// unknown ones for a shorter while (a misconfigured agent retrying costs no query per try), and
// configured tokens (--agent-tokens) for good, each under its stored id. A revocation on any
// replica reaches it by NOTIFY: the token is forgotten and `onRevoked` listeners (the feed
// routes, which cut the token's streams) are told.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { forbidden, unauthorized } from '../errors';
import type { Logger } from '../log';
import { agentTokens, type Sql } from '../store';
import { onceUntilFailed } from './once';

declare module 'fastify' {
  interface FastifyRequest {
    /** Region of the authenticated agent token (cluster API only). */
    agentRegion?: string;
    /** Stored id of the authenticated agent token (cluster API only). */
    agentTokenId?: string;
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

/**
 * onRequest hook of the admin API. With `agents`, a valid agent token is told it has the wrong
 * scope (403) rather than that it is unknown (401).
 */
export function adminAuth(adminToken: string, opts: { agents?: AgentAuth } = {}) {
  return async (req: FastifyRequest): Promise<void> => {
    const token = bearerToken(req);
    if (!token) throw unauthorized();
    if (tokensEqual(token, adminToken)) return;
    if (opts.agents && (await opts.agents.authenticate(token))) throw forbidden('an agent token cannot access the public API');
    throw unauthorized('invalid admin token');
  };
}

/**
 * How long a verified agent token is trusted without asking the database again. Every long
 * poll re-authenticates; caching keeps 1,000 agents from costing 1,000 lookups per wait cycle.
 * Revocations do not wait for it: they arrive by NOTIFY.
 */
const AGENT_TOKEN_CACHE_MS = 30_000;
/**
 * How long an unknown token stays known as unknown. Short, because a token created just now
 * on another replica may have been tried a moment too early; long enough that an agent
 * retrying with a wrong token in a tight loop costs one query per period, not one per try.
 */
const UNKNOWN_TOKEN_CACHE_MS = 10_000;
/** Entries per cache: a bound on memory when someone sprays random tokens at us. Least
 *  recently used go first, so the agents in constant use stay cached through a spray. */
const CACHE_MAX_ENTRIES = 10_000;

export interface AgentIdentity {
  region: string;
  tokenId: string;
}

export interface AgentAuthOptions {
  sql: Sql;
  /** REGION → token pairs from --agent-tokens; registered (hashed) on start. */
  configured?: Record<string, string>;
  /** When set, the admin token on the cluster API is told it has the wrong scope (403). */
  adminToken?: string;
  logger?: Logger;
  /** Entries per cache (tests make it small); CACHE_MAX_ENTRIES otherwise. */
  cacheMaxEntries?: number;
}

export class AgentAuth {
  // ttl 0 on set: a configured token stays until evicted or cleared (it is also stored).
  private readonly known: LRUCache<string, AgentIdentity>;
  private readonly unknown: LRUCache<string, true>;
  private readonly revokedIds = new Set<string>();
  /** Hashes of configured tokens that ctrl refuses (stored for another region): never looked up. */
  private readonly refused = new Set<string>();
  private readonly listeners = new Set<(tokenId: string) => void>();
  private unlisten: (() => Promise<void>) | undefined;

  constructor(private readonly opts: AgentAuthOptions) {
    const max = opts.cacheMaxEntries ?? CACHE_MAX_ENTRIES;
    this.known = new LRUCache({ max, ttl: AGENT_TOKEN_CACHE_MS });
    this.unknown = new LRUCache({ max, ttl: UNKNOWN_TOKEN_CACHE_MS });
    for (const [region, token] of Object.entries(opts.configured ?? {})) {
      if (token.length < agentTokens.MIN_TOKEN_LENGTH) {
        throw new Error(`agent token of region ${region} is too short: tokens must be at least ${agentTokens.MIN_TOKEN_LENGTH} characters`);
      }
    }
  }

  /** Registers configured tokens and starts listening for revocations; idempotent, and run by
   *  the first authentication if nobody called it before. */
  readonly start = onceUntilFailed(() => this.init());

  private async init(): Promise<void> {
    const { sql, logger } = this.opts;
    for (const [region, token] of Object.entries(this.opts.configured ?? {})) {
      const row = await agentTokens.ensureAgentToken(sql, region, token);
      if (row.revoked) logger?.warn({ tokenId: row.id, region }, 'configured agent token is revoked: refused');
      else if (row.region !== region) {
        // Refused for both regions: serving it for the stored one would contradict the flag
        // and this line, and the same secret configured twice is a mistake either way.
        this.refused.add(agentTokens.hashToken(token));
        logger?.error({ tokenId: row.id, region, storedRegion: row.region }, 'configured agent token belongs to another region: refused');
      } else this.known.set(agentTokens.hashToken(token), { region, tokenId: row.id }, { ttl: 0 });
    }
    // Known revocations first, so the catch-up after a listener reconnect announces (and logs)
    // only the ones it missed, not every token ever revoked.
    for (const t of await agentTokens.listAgentTokens(sql)) if (t.revokedAt) this.revokedIds.add(t.id);
    this.unlisten = await agentTokens.listenRevocations(
      sql,
      (id) => this.revoked(id),
      // Revocations sent while the connection was down are lost: forget every cached token
      // (configured ones included), so the next request of each asks the database again.
      () => {
        this.known.clear();
        this.opts.logger?.warn('token revocation listener reconnected: token cache cleared');
        void this.catchUpRevocations();
      },
    );
  }

  /**
   * Revocations whose NOTIFY was lost while the listener was down: their streams would run on
   * until their wait limit, so they are found in the table and cut like any other.
   */
  private async catchUpRevocations(): Promise<void> {
    try {
      for (const t of await agentTokens.listAgentTokens(this.opts.sql)) if (t.revokedAt && !this.revokedIds.has(t.id)) this.revoked(t.id);
    } catch (err) {
      this.opts.logger?.warn({ err }, 'could not re-read revoked agent tokens after the listener reconnected');
    }
  }

  /** Whether this replica knows the token id as revoked (a stream admitted meanwhile is refused). */
  isRevoked(tokenId: string): boolean {
    return this.revokedIds.has(tokenId);
  }

  /** Subscribes to revocations seen by this replica; returns the unsubscribe function. */
  onRevoked(fn: (tokenId: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private revoked(tokenId: string): void {
    this.revokedIds.add(tokenId);
    for (const [k, v] of this.known.entries()) if (v.tokenId === tokenId) this.known.delete(k);
    this.opts.logger?.info({ tokenId }, 'agent token revoked');
    for (const fn of this.listeners) fn(tokenId);
  }

  /** The identity of a live agent token, or undefined (unknown, revoked, too short). */
  async authenticate(token: string): Promise<AgentIdentity | undefined> {
    if (token.length < agentTokens.MIN_TOKEN_LENGTH) return undefined;
    await this.start();
    const key = agentTokens.hashToken(token);
    if (this.refused.has(key)) return undefined;
    const hit = this.known.get(key);
    if (hit) return { region: hit.region, tokenId: hit.tokenId };
    if (this.unknown.has(key)) return undefined;
    const row = await agentTokens.lookupToken(this.opts.sql, token);
    // A revocation may have arrived while the lookup was in flight.
    if (!row || this.revokedIds.has(row.id)) {
      this.unknown.set(key, true);
      return undefined;
    }
    this.known.set(key, { region: row.region, tokenId: row.id });
    return { region: row.region, tokenId: row.id };
  }

  /** onRequest hook of the cluster API. */
  readonly onRequest = async (req: FastifyRequest): Promise<void> => {
    const token = bearerToken(req);
    if (!token) throw unauthorized();
    if (this.opts.adminToken && tokensEqual(token, this.opts.adminToken)) throw forbidden('the admin token cannot access the cluster API');
    const id = await this.authenticate(token);
    if (!id) throw unauthorized('invalid agent token');
    req.agentRegion = id.region;
    req.agentTokenId = id.tokenId;
  };

  async close(): Promise<void> {
    await this.unlisten?.().catch(() => {});
    this.unlisten = undefined;
  }
}

/** Throws 403 unless the authenticated agent serves `region`. */
export function assertAgentRegion(req: FastifyRequest, region: string): void {
  if (req.agentRegion !== region) {
    throw forbidden(`agent token of region ${req.agentRegion ?? '(none)'} cannot access region ${region}`);
  }
}
