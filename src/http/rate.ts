// Token buckets, pure: `rate` tokens a second up to a burst of the same count. The caller keeps
// the buckets (KeyAuth, per key and per workspace, on one replica) and the clock.

export interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms). */
  at: number;
}

/** The bucket as of `now`: full when new, refilled for the time since it was last seen. */
export function refilled(b: Bucket | undefined, rate: number, now: number): Bucket {
  if (!b) return { tokens: rate, at: now };
  return { tokens: Math.min(rate, b.tokens + (Math.max(0, now - b.at) / 1000) * rate), at: now };
}

/** Whole seconds until a bucket short of a token has one again (at least 1, for Retry-After). */
export const retryAfterS = (b: Bucket, rate: number) => Math.max(1, Math.ceil((1 - b.tokens) / rate));
