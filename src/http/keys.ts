// Scoped API keys on the public API: authentication, revocation, expiry and the rate limits.
//
// KeyAuth keeps verified keys for a short while (every call of a busy client would otherwise
// cost a lookup) and unknown ones for less. A revocation on any replica reaches it by NOTIFY
// (src/store/api-keys.ts): the key is forgotten, and everything open under it (WebSockets,
// calls still waiting for a workflow) is closed through the closers registered with `hold`.
// The same doorbell as agent tokens (src/http/auth.ts), on a channel of its own. A listener
// that reconnects clears the cache and re-reads the revoked ids, since NOTIFYs sent meanwhile
// are lost.
//
// Expiry is revocation on a timer (issue 32): `hold` is told the key's expiresAt, and one timer
// per key runs the same closers at that instant, so nothing opened before expiry outlives it.
// The clock and the timer are injectable (tests).
//
// The rate limits are token buckets (rate.ts) per replica, one per key (`ratePerSecond`) and one
// per workspace (`workspaceRatePerSecond`, shared by all the workspace's keys, so minting keys
// does not multiply a tenant's rate); a call takes a token from both or from neither. Behind N
// replicas a key gets up to N times the rate; the limit is there to keep one client from
// starving the others on a replica, not to bill.
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors';
import type { Logger } from '../log';
import { apiKeys, type Sql } from '../store';
import type { ApiKey } from '../store/api-keys';
import { onceUntilFailed } from './once';
import { refilled, retryAfterS, type Bucket } from './rate';

/** A verified key is trusted this long without asking the database; revocations do not wait for it. */
const KEY_CACHE_MS = 30_000;
/** An unknown key stays unknown this long: a client retrying a wrong key costs one query per period. */
const UNKNOWN_KEY_CACHE_MS = 10_000;
/** Entries per cache: bounds memory when someone sprays random keys at us. */
const CACHE_MAX_ENTRIES = 10_000;

/** Longest delay a Node timer takes (about 24.8 days); a later expiry re-arms when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface KeyClock {
  now(): number;
  /** Runs `fn` after `ms`; returns the cancel. */
  setTimer(fn: () => void, ms: number): () => void;
}

/** The wall clock and real timers; tests spread it and replace `now`. */
export const realKeyClock: KeyClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms).unref();
    return () => clearTimeout(t);
  },
};

export interface KeyAuthOptions {
  sql: Sql;
  logger?: Logger;
  /** Requests per second per key on this replica (0: no limit). */
  ratePerSecond?: number;
  /** Requests per second of all of a workspace's keys together on this replica (0: no limit). */
  workspaceRatePerSecond?: number;
  clock?: KeyClock;
}

/** Why what a key opened is being closed. */
export type CloseReason = 'revoked' | 'expired';

/** A live key, or why not: `revoked` and `expired` carry the key, so the refusal is recorded
 *  under its id and scope (its workspace's auditors see it), not as an anonymous caller. */
export type KeyCheck = { key: ApiKey } | { problem: 'unknown' } | { problem: 'expired' | 'revoked'; key: ApiKey };

export class KeyAuth {
  private readonly known = new LRUCache<string, ApiKey>({ max: CACHE_MAX_ENTRIES, ttl: KEY_CACHE_MS });
  private readonly unknown = new LRUCache<string, true>({ max: CACHE_MAX_ENTRIES, ttl: UNKNOWN_KEY_CACHE_MS });
  /** Revoked keys by hash: a revocation is final, so they are kept until evicted. */
  private readonly dead = new LRUCache<string, ApiKey>({ max: CACHE_MAX_ENTRIES });
  private readonly revokedIds = new Set<string>();
  private readonly closers = new Map<string, Set<(why: CloseReason) => void>>();
  /** The expiry timer of each key that holds something open, and the instant it is for. */
  private readonly expiries = new Map<string, { at: number; cancel: () => void }>();
  private readonly buckets = new LRUCache<string, Bucket>({ max: CACHE_MAX_ENTRIES });
  private unlisten: (() => Promise<void>) | undefined;
  private readonly clock: KeyClock;

  constructor(private readonly opts: KeyAuthOptions) {
    this.clock = opts.clock ?? realKeyClock;
  }

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
    for (const [k, v] of this.known.entries()) {
      if (v.id !== id) continue;
      this.known.delete(k);
      this.dead.set(k, v);
    }
    this.opts.logger?.info({ keyId: id, open: this.closers.get(id)?.size ?? 0 }, 'api key revoked');
    this.closeAll(id, 'revoked');
  }

  /** Runs and forgets every closer of key `id`, and its expiry timer. */
  private closeAll(id: string, why: CloseReason): void {
    const open = this.closers.get(id);
    this.closers.delete(id);
    this.expiries.get(id)?.cancel();
    this.expiries.delete(id);
    for (const close of open ?? []) close(why);
  }

  /** Arms (or keeps) the timer that closes key `id`'s open things at `at`. */
  private armExpiry(id: string, at: number): void {
    const armed = this.expiries.get(id);
    if (armed && armed.at === at) return;
    armed?.cancel();
    const fire = () => {
      this.expiries.delete(id);
      // A timer capped at MAX_TIMER_MS fired before the expiry: wait the rest.
      if (this.clock.now() < at) return this.armExpiry(id, at);
      this.opts.logger?.info({ keyId: id, open: this.closers.get(id)?.size ?? 0 }, 'api key expired');
      this.closeAll(id, 'expired');
    };
    const cancel = this.clock.setTimer(fire, Math.min(MAX_TIMER_MS, Math.max(0, at - this.clock.now())));
    this.expiries.set(id, { at, cancel });
  }

  async authenticate(token: string): Promise<KeyCheck> {
    await this.start();
    const h = apiKeys.hashKey(token);
    const dead = this.dead.get(h);
    if (dead) return { problem: 'revoked', key: dead };
    let key = this.known.get(h);
    if (!key) {
      if (this.unknown.get(h)) return { problem: 'unknown' };
      key = await apiKeys.lookupKey(this.opts.sql, token);
      if (!key) {
        this.unknown.set(h, true);
        return { problem: 'unknown' };
      }
      // A revocation may have arrived while the lookup was in flight.
      if (key.revokedAt || this.revokedIds.has(key.id)) {
        this.dead.set(h, key);
        return { problem: 'revoked', key };
      }
      this.known.set(h, key);
    }
    if (key.expiresAt && key.expiresAt.getTime() <= this.clock.now()) return { problem: 'expired', key };
    return { key };
  }

  /** Whether this replica knows the key as revoked (something admitted meanwhile is refused). */
  isRevoked(id: string): boolean {
    return this.revokedIds.has(id);
  }

  /**
   * Registers what to close when key `id` is revoked or reaches `expiresAt`; returns the release.
   * Closed at once when the revocation already arrived (it raced the caller's admission) or the
   * key has expired meanwhile.
   */
  hold(id: string, close: (why: CloseReason) => void, expiresAt: Date | null = null): () => void {
    if (this.revokedIds.has(id)) {
      close('revoked');
      return () => {};
    }
    if (expiresAt && expiresAt.getTime() <= this.clock.now()) {
      close('expired');
      return () => {};
    }
    let set = this.closers.get(id);
    if (!set) this.closers.set(id, (set = new Set()));
    set.add(close);
    if (expiresAt) this.armExpiry(id, expiresAt.getTime());
    return () => {
      set.delete(close);
      if (set.size > 0 || this.closers.get(id) !== set) return;
      this.closers.delete(id);
      this.expiries.get(id)?.cancel();
      this.expiries.delete(id);
    };
  }

  /**
   * Takes one request from the key's bucket and its workspace's; throws 429 (with when to retry)
   * when either is empty, taking from neither.
   */
  take(id: string, workspaceId: string, now = this.clock.now()): void {
    const limits = [
      { name: `key:${id}`, rate: this.opts.ratePerSecond ?? 0, who: 'this key is' },
      { name: `ws:${workspaceId}`, rate: this.opts.workspaceRatePerSecond ?? 0, who: `workspace ${workspaceId} is` },
    ].filter((l) => l.rate > 0);
    const buckets = limits.map((l) => refilled(this.buckets.get(l.name), l.rate, now));
    const empty = buckets.findIndex((b) => b.tokens < 1);
    if (empty < 0) for (const b of buckets) b.tokens -= 1;
    limits.forEach((l, i) => this.buckets.set(l.name, buckets[i]!));
    if (empty >= 0) {
      const l = limits[empty]!;
      const after = retryAfterS(buckets[empty]!, l.rate);
      throw Object.assign(new AppError('ERR_RATE_LIMITED', `${l.who} over its rate of ${l.rate} requests per second; retry in ${after} s`), { retryAfterS: after });
    }
  }

  async close(): Promise<void> {
    await this.unlisten?.().catch(() => {});
    this.unlisten = undefined;
  }
}
