// Fault injection and rate limiting in front of the API, for chaos harnesses and for clients'
// retry paths. Both are off by default and switched through the admin API.
//
// - Chaos: for `durationMs`, a share (`ratio`) of API requests, optionally only some verbs or
//   resources, is answered with a 500, answered with a 429 and Retry-After, or delayed by
//   `latencyMs` and then served.
// - Rate limit: a token bucket (`qps`, `burst`) over all API requests; past it the answer is
//   a 429 with Retry-After, as the API server's priority-and-fairness filter sends it.
//
// Pure decisions (`decide`) take the clock and a random number, so they are table-testable.

export type ChaosMode = 'error' | 'throttle' | 'latency';
export const CHAOS_MODES: readonly ChaosMode[] = ['error', 'throttle', 'latency'];

export interface ChaosRule {
  mode: ChaosMode;
  /** Share of matching requests affected, 0..1. */
  ratio: number;
  /** Wall-clock end of the rule (ms since epoch). */
  until: number;
  latencyMs: number;
  retryAfterSeconds: number;
  /** Only these verbs (get, list, watch, create, update, patch, apply, delete, …) when set. */
  verbs?: string[];
  /** Only these resources (plural, `pods/status`, …) when set. */
  resources?: string[];
}

export interface RateLimit {
  qps: number;
  burst: number;
  retryAfterSeconds: number;
}

export type Decision =
  | { action: 'pass' }
  | { action: 'delay'; ms: number }
  | { action: 'error' }
  | { action: 'throttle'; retryAfterSeconds: number };

/** What the chaos rule does to one request. */
export function decide(rule: ChaosRule | undefined, verb: string, resource: string | undefined, now: number, random: number): Decision {
  if (!rule || now >= rule.until) return { action: 'pass' };
  if (rule.verbs && !rule.verbs.includes(verb)) return { action: 'pass' };
  if (rule.resources && (!resource || !rule.resources.includes(resource))) return { action: 'pass' };
  if (random >= rule.ratio) return { action: 'pass' };
  if (rule.mode === 'latency') return { action: 'delay', ms: rule.latencyMs };
  if (rule.mode === 'throttle') return { action: 'throttle', retryAfterSeconds: rule.retryAfterSeconds };
  return { action: 'error' };
}

/** Parses `POST /_sim/chaos` bodies; returns the rule or the problems, every one named. */
export function parseChaosRule(body: Record<string, unknown>, now: number): { rule: ChaosRule } | { errors: string[] } {
  const errors: string[] = [];
  const mode = body.mode;
  if (typeof mode !== 'string' || !CHAOS_MODES.includes(mode as ChaosMode)) errors.push(`mode: must be one of ${CHAOS_MODES.join(', ')}`);
  const ratio = body.ratio ?? 1;
  if (typeof ratio !== 'number' || ratio < 0 || ratio > 1) errors.push('ratio: must be a number from 0 to 1');
  const durationMs = body.durationMs;
  if (typeof durationMs !== 'number' || !(durationMs > 0)) errors.push('durationMs: must be a positive number');
  const latencyMs = body.latencyMs ?? 0;
  if (typeof latencyMs !== 'number' || latencyMs < 0 || (mode === 'latency' && latencyMs === 0)) errors.push('latencyMs: must be a positive number for mode latency');
  const retryAfterSeconds = body.retryAfterSeconds ?? 1;
  if (typeof retryAfterSeconds !== 'number' || !Number.isInteger(retryAfterSeconds) || retryAfterSeconds < 0) errors.push('retryAfterSeconds: must be a whole number of seconds');
  const list = (k: string) => {
    const v = body[k];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) errors.push(`${k}: must be a list of strings`);
    return v as string[];
  };
  const verbs = list('verbs');
  const resources = list('resources');
  if (errors.length > 0) return { errors };
  return {
    rule: {
      mode: mode as ChaosMode,
      ratio: ratio as number,
      until: now + (durationMs as number),
      latencyMs: latencyMs as number,
      retryAfterSeconds: retryAfterSeconds as number,
      ...(verbs ? { verbs } : {}),
      ...(resources ? { resources } : {}),
    },
  };
}

/** A token bucket: `take` answers whether a request may pass now. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly limit: RateLimit,
    now: number,
  ) {
    this.tokens = limit.burst;
    this.last = now;
  }

  take(now: number): boolean {
    this.tokens = Math.min(this.limit.burst, this.tokens + ((now - this.last) / 1000) * this.limit.qps);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export function parseRateLimit(body: Record<string, unknown>): { limit: RateLimit } | { errors: string[] } {
  const errors: string[] = [];
  const { qps, burst = qps, retryAfterSeconds = 1 } = body;
  if (typeof qps !== 'number' || !(qps > 0)) errors.push('qps: must be a positive number');
  if (typeof burst !== 'number' || !(burst >= 1)) errors.push('burst: must be a number of at least 1');
  if (typeof retryAfterSeconds !== 'number' || !Number.isInteger(retryAfterSeconds) || retryAfterSeconds < 0) errors.push('retryAfterSeconds: must be a whole number of seconds');
  if (errors.length > 0) return { errors };
  return { limit: { qps: qps as number, burst: burst as number, retryAfterSeconds: retryAfterSeconds as number } };
}

/** The state the server consults before each API request. */
export class TrafficControl {
  rule: ChaosRule | undefined;
  bucket: TokenBucket | undefined;
  /** Requests answered by chaos or the rate limit, by outcome. */
  readonly injected = { error: 0, throttle: 0, delay: 0, rateLimited: 0 };

  constructor(limit?: RateLimit) {
    if (limit) this.bucket = new TokenBucket(limit, Date.now());
  }

  /** Decision for one request: rate limit first (it guards the server), then chaos. */
  check(verb: string, resource: string | undefined): Decision {
    const now = Date.now();
    if (this.bucket && !this.bucket.take(now)) {
      this.injected.rateLimited++;
      return { action: 'throttle', retryAfterSeconds: this.bucket.limit.retryAfterSeconds };
    }
    if (this.rule && now >= this.rule.until) this.rule = undefined;
    const d = decide(this.rule, verb, resource, now, Math.random());
    if (d.action !== 'pass') this.injected[d.action === 'delay' ? 'delay' : d.action]++;
    return d;
  }
}
