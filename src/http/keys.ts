// Scoped API keys on the public API: authentication, revocation and the per-key rate limit.
//
// KeyAuth keeps verified keys for a short while (every call of a busy client would otherwise
// cost a lookup) and unknown ones for less. A revocation on any replica reaches it by NOTIFY
// (src/store/api-keys.ts): the key is forgotten, and everything open under it (WebSockets,
// calls still waiting for a workflow) is closed through the closers registered with `hold`.
// The same doorbell as agent tokens (src/http/auth.ts), on a channel of its own. A listener
// that reconnects clears the cache and re-reads the revoked ids, since NOTIFYs sent meanwhile
// are lost.
//
// The rate limit is a token bucket per key and per replica: `ratePerSecond` tokens a second,
// up to a burst of the same count. Behind N replicas a key gets up to N times the rate; the
// limit is there to keep one client from starving the others on a replica, not to bill.
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors';
import type { Logger } from '../log';
import { apiKeys, type Sql } from '../store';
import type { ApiKey } from '../store/api-keys';
import { onceUntilFailed } from './once';

/** A verified key is trusted this long without asking the database; revocations do not wait for it. */
const KEY_CACHE_MS = 30_000;
/** An unknown key stays unknown this long: a client retrying a wrong key costs one query per period. */
const UNKNOWN_KEY_CACHE_MS = 10_000;
/** Entries per cache: bounds memory when someone sprays random keys at us. */
const CACHE_MAX_ENTRIES = 10_000;

export interface KeyAuthOptions {
  sql: Sql;
  logger?: Logger;
  /** Requests per second per key on this replica (0: no limit). */
  ratePerSecond?: number;
  /** The keys' clock (ms) for rate-limit refills and expiry: Date.now, or a test's. */
  clock?: () => number;
}

export type KeyCheck = { key: ApiKey } | { problem: 'unknown' | 'expired' };

export class KeyAuth {
  private readonly known = new LRUCache<string, ApiKey>({ max: CACHE_MAX_ENTRIES, ttl: KEY_CACHE_MS });
  private readonly unknown = new LRUCache<string, true>({ max: CACHE_MAX_ENTRIES, ttl: UNKNOWN_KEY_CACHE_MS });
  private readonly revokedIds = new Set<string>();
  private readonly closers = new Map<string, Set<() => void>>();
  private readonly buckets = new LRUCache<string, { tokens: number; at: number }>({ max: CACHE_MAX_ENTRIES });
  private unlisten: (() => Promise<void>) | undefined;

  constructor(private readonly opts: KeyAuthOptions) {}

  readonly start = onceUntilFailed(() => this.init());

  private async init(): Promise<void> {
    const { sql } = this.opts;
    for (const id of await apiKeys.revokedKeyIds(sql)) this.revokedIds.add(id);
    this.unlisten = await apiKeys.listenKeyRevocations(
      sql,
      (id) => this.revoked(id),
      () => {
        this.known.clear();
        this.opts.logger?.warn('key revocation listener reconnected: key cache cleared');
        void apiKeys
          .revokedKeyIds(sql)
          .then((ids) => ids.filter((id) => !this.revokedIds.has(id)).forEach((id) => this.revoked(id)))
          .catch((err: unknown) => this.opts.logger?.warn({ err }, 'could not re-read revoked keys after the listener reconnected'));
      },
    );
  }

  private revoked(id: string): void {
    this.revokedIds.add(id);
    for (const [k, v] of this.known.entries()) if (v.id === id) this.known.delete(k);
    const open = this.closers.get(id);
    this.closers.delete(id);
    this.opts.logger?.info({ keyId: id, open: open?.size ?? 0 }, 'api key revoked');
    for (const close of open ?? []) close();
  }

  async authenticate(token: string): Promise<KeyCheck> {
    await this.start();
    const h = apiKeys.hashKey(token);
    let key = this.known.get(h);
    if (!key) {
      if (this.unknown.get(h)) return { problem: 'unknown' };
      key = await apiKeys.lookupKey(this.opts.sql, token);
      // A revocation may have arrived while the lookup was in flight.
      if (!key || this.revokedIds.has(key.id)) {
        this.unknown.set(h, true);
        return { problem: 'unknown' };
      }
      this.known.set(h, key);
    }
    if (key.expiresAt && key.expiresAt.getTime() <= (this.opts.clock ?? Date.now)()) return { problem: 'expired' };
    return { key };
  }

  /** Whether this replica knows the key as revoked (something admitted meanwhile is refused). */
  isRevoked(id: string): boolean {
    return this.revokedIds.has(id);
  }

  /**
   * Registers what to close when key `id` is revoked; returns the release. Closed at once when
   * the revocation already arrived (it raced the caller's admission).
   */
  hold(id: string, close: () => void): () => void {
    if (this.revokedIds.has(id)) {
      close();
      return () => {};
    }
    let set = this.closers.get(id);
    if (!set) this.closers.set(id, (set = new Set()));
    set.add(close);
    return () => {
      set.delete(close);
      if (set.size === 0 && this.closers.get(id) === set) this.closers.delete(id);
    };
  }

  /** Takes one request from the key's bucket; throws 429 (with when to retry) when it is empty. */
  take(id: string, now = (this.opts.clock ?? Date.now)()): void {
    const rate = this.opts.ratePerSecond ?? 0;
    if (rate <= 0) return;
    const b = this.buckets.get(id) ?? { tokens: rate, at: now };
    b.tokens = Math.min(rate, b.tokens + ((now - b.at) / 1000) * rate);
    b.at = now;
    if (b.tokens < 1) {
      this.buckets.set(id, b);
      const retryAfterS = Math.max(1, Math.ceil((1 - b.tokens) / rate));
      throw Object.assign(new AppError('ERR_RATE_LIMITED', `this key is over its rate of ${rate} requests per second; retry in ${retryAfterS} s`), { retryAfterS });
    }
    b.tokens -= 1;
    this.buckets.set(id, b);
  }

  async close(): Promise<void> {
    await this.unlisten?.().catch(() => {});
    this.unlisten = undefined;
  }
}
