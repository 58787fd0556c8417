// The count rule for sparse, zero-heavy series (errors are rare: most windows count none), where
// a rank test is blind: it sees ties at zero and, when the canary gets a tenth of the traffic,
// even more zeros on the canary's side. Conditional on the total errors X = x_c + x_b, the
// canary's share is Binomial(X, p) with p = T_c·r_c / (T_c·r_c + T_b·r_b) (T: requests, r: error
// rates), whatever the traffic split. "Canary worse beyond tolerance" is r_c > (1 + tol)·r_b,
// i.e. p above p0 = (1 + tol)·T_c / ((1 + tol)·T_c + T_b): an exact one-sided binomial test, and
// the rate ratio's interval from the Clopper-Pearson interval of p.
import { binomCdf, binomSf, logBeta } from './special';

export interface Counts {
  errors: number;
  total: number;
}

/** p0 of the conditional test: the canary's share of errors if its rate were `ratio` × the stable's. */
export function nullShare(canary: Counts, baseline: Counts, ratio: number): number {
  return (ratio * canary.total) / (ratio * canary.total + baseline.total);
}

/** One-sided exact p: P(X_c ≥ x_c) when the canary's rate is `ratio` × the stable's. */
export function conditionalBinomialP(canary: Counts, baseline: Counts, ratio: number): number {
  const n = canary.errors + baseline.errors;
  return binomSf(canary.errors, n, nullShare(canary, baseline, ratio));
}

/** The p with P(tail) = target, by bisection (the tails are monotone in p). */
function solve(f: (p: number) => number, target: number, increasing: boolean): number {
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (f(mid) < target === increasing) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Clopper-Pearson interval of a binomial proportion k/n at `confidence` (two-sided). */
export function clopperPearson(k: number, n: number, confidence: number): { low: number; high: number } {
  const a = (1 - confidence) / 2;
  const low = k === 0 ? 0 : solve((p) => binomSf(k, n, p), a, true);
  const high = k === n ? 1 : solve((p) => binomCdf(k, n, p), a, false);
  return { low, high };
}

/** The rate ratio r_c / r_b with its interval (Infinity when the stable had no errors). */
export function rateRatio(canary: Counts, baseline: Counts, confidence: number): { estimate: number; low: number; high: number } {
  const n = canary.errors + baseline.errors;
  const exposure = baseline.total / canary.total;
  const toRatio = (p: number) => (p >= 1 ? Infinity : (p / (1 - p)) * exposure);
  if (n === 0) return { estimate: Number.NaN, low: 0, high: Infinity };
  const ci = clopperPearson(canary.errors, n, confidence);
  return { estimate: toRatio(canary.errors / n), low: toRatio(ci.low), high: toRatio(ci.high) };
}

/**
 * The always-valid evidence of the count rule: the likelihood ratio of a Beta(κ·p0, κ·(1 − p0))
 * mixture of shares against the null share p0. It is a nonnegative martingale under the null as
 * errors accrue, so by Ville's inequality it reaches 1/α with probability at most α, however
 * often it is looked at. κ = 10: the mixture is about as wide as ten errors' worth of evidence.
 */
export function betaBinomialLogLR(k: number, n: number, p0: number, kappa = 10): number {
  const a = kappa * p0;
  const b = kappa * (1 - p0);
  return logBeta(k + a, n - k + b) - logBeta(a, b) - (k * Math.log(p0) + (n - k) * Math.log1p(-p0));
}
