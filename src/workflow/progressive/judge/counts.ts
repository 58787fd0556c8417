// The count rule for error series, where a rank test is blind (errors are rare: most windows count
// none, and at a 10% step the canary shows more zero windows at an equal rate). Errors are
// Poisson with rates r_c, r_b per request; in one sample window with T_c and T_b requests and
// n errors in all, the canary's share is Binomial(n, p) with p = ρ·T_c / (ρ·T_c + T_b), ρ = r_c/r_b,
// whatever the stable's rate does over time (Lindon and Malek 2022: time-inhomogeneous Poisson
// processes). Conditioning window by window keeps a traffic step (10% → 50%) during an incident
// from being read as the canary's fault, which sums over the whole window would do.
//
// The test: a mixture of per-window likelihood ratios of ρ = ρ₀·m against ρ₀ over multipliers m,
// a test martingale under ρ ≤ ρ₀ (for "worse"; ρ ≥ ρ₀ for "better"). Counts may be real
// (`increase()` extrapolates; `rate()` spreads an event over its window): the ratios take them as
// exponents, so a window's ratio is what its real counts weigh, and a smoothed series still sums
// to its events. The interval is the aggregate Clopper-Pearson one, by the incomplete beta
// function, which is defined for real counts (special.ts).
import { betaQuantile, binomSf } from './special';

export interface Counts {
  errors: number;
  total: number;
}

/** One sample window of both sides. */
export interface Window {
  canaryErrors: number;
  canaryTotal: number;
  baselineErrors: number;
  baselineTotal: number;
}

/** A discrete mixing distribution over rate-ratio multipliers. */
export type RatioPrior = readonly { multiplier: number; weight: number }[];

/**
 * "Canary worse": each multiplier's test is quickest where log(m)·√(n·p(1 − p)) ≈ 2.45 (n errors
 * in all, p the canary's share): at 10% of traffic 2× with ~100 errors (ten checks at 1% of 100
 * requests a second, one at 1,000), 1.3× with ~1,000 (the tolerance boundary's effects), 4× with
 * ~25 (sparse errors).
 */
export const COUNT_WORSE_PRIOR: RatioPrior = [
  { multiplier: 1.3, weight: 0.25 },
  { multiplier: 2, weight: 0.45 },
  { multiplier: 4, weight: 0.3 },
];
/** "Canary better than the tolerance" (promoteEarly): rates below the boundary by a fifth or more. */
export const COUNT_BETTER_PRIOR: RatioPrior = [
  { multiplier: 0.8, weight: 0.4 },
  { multiplier: 0.5, weight: 0.4 },
  { multiplier: 0.25, weight: 0.2 },
];
/**
 * At most this much of the worse test's weight goes to "every error is the canary's" (below): the
 * rest must still find a canary with some stable errors.
 */
const MAX_ALL_CANARY_WEIGHT = 0.85;

/** The canary's share of the window's errors if its rate were `ratio` × the stable's. */
export const nullShare = (canaryTotal: number, baselineTotal: number, ratio: number): number => (ratio * canaryTotal) / (ratio * canaryTotal + baselineTotal);

/** Windows that say something: requests on both sides and at least one error. */
const informative = (w: Window) => w.canaryTotal > 0 && w.baselineTotal > 0 && w.canaryErrors + w.baselineErrors > 0;

/**
 * The weight of the "all errors on the canary's side" part of the worse test, from the first
 * window with errors (fixed before any error's side is seen, as a martingale's weights must be).
 * An exact one-look test of "no worse" fails k errors, none of them the stable's, when p₀^k ≤ α
 * (p₀ the canary's share of requests); this part alone reaches 1/α exactly there when its weight
 * is p₀^k/α, so with no stable errors the judge fails on the fewest errors that exact test allows
 * (unless that takes more than MAX_ALL_CANARY_WEIGHT, which only happens where p₀^k is just
 * under α: then one error more).
 */
export function allCanaryWeight(windows: readonly Window[], alpha: number): number {
  const first = windows.find(informative);
  if (!first) return 0;
  const p0 = nullShare(first.canaryTotal, first.baselineTotal, 1);
  if (!(p0 > 0 && p0 < 1)) return 0;
  const k = Math.max(1, Math.ceil(Math.log(alpha) / Math.log(p0) - 1e-12));
  // The 1e-9 keeps p₀^k/α's rounding from missing the bar it was chosen to reach.
  return Math.min(MAX_ALL_CANARY_WEIGHT, (p0 ** k / alpha) * (1 + 1e-9));
}

/**
 * ln Λ of the mixture against the null ρ₀: Σ_m w_m·Π_windows LR(ρ₀·m : ρ₀), plus `allCanary` on
 * the limit m → ∞ (Π p₀^−k while no error is the stable's, else 0). Windows without requests on a
 * side or without errors carry nothing.
 */
export function countLogLR(windows: readonly Window[], ratio0: number, prior: RatioPrior, allCanary = 0): number {
  const scale = 1 - allCanary;
  const logs = prior.map((p) => Math.log(p.weight * scale));
  let allLog = allCanary > 0 ? Math.log(allCanary) : -Infinity;
  for (const w of windows) {
    if (!informative(w)) continue;
    // With r = ρ·T_c/T_b: p = r/(1 + r), so p1/p0 = m·(1 + r0)/(1 + m·r0) and (1 − p1)/(1 − p0) = (1 + r0)/(1 + m·r0).
    const r0 = (ratio0 * w.canaryTotal) / w.baselineTotal;
    for (let i = 0; i < prior.length; i++) {
      const m = prior[i]!.multiplier;
      const stay = Math.log((1 + r0) / (1 + m * r0));
      logs[i] = logs[i]! + w.canaryErrors * (Math.log(m) + stay) + w.baselineErrors * stay;
    }
    allLog = w.baselineErrors > 0 ? -Infinity : allLog + w.canaryErrors * Math.log1p(1 / r0);
  }
  const terms = [...logs, allLog].filter((t) => t > -Infinity);
  const top = Math.max(...terms);
  return top + Math.log(terms.reduce((s, t) => s + Math.exp(t - top), 0));
}

/** The ρ that explains the windows best: Σ (canary errors − n·p(ρ)) = 0, by bisection on log ρ. */
export function ratioEstimate(windows: readonly Window[]): number {
  const used = windows.filter(informative);
  const canary = used.reduce((s, w) => s + w.canaryErrors, 0);
  const baseline = used.reduce((s, w) => s + w.baselineErrors, 0);
  if (canary + baseline === 0) return Number.NaN;
  if (baseline === 0) return Infinity;
  if (canary === 0) return 0;
  const excess = (logRatio: number) => used.reduce((s, w) => s + w.canaryErrors - (w.canaryErrors + w.baselineErrors) * nullShare(w.canaryTotal, w.baselineTotal, Math.exp(logRatio)), 0);
  let lo = -50;
  let hi = 50;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (excess(mid) > 0) lo = mid;
    else hi = mid;
  }
  return Math.exp((lo + hi) / 2);
}

/**
 * The ratios an anytime test rejects at `alpha`, as a confidence sequence [low, high]: low the
 * largest ρ₀ that "worse" still rejects, high the smallest that "better" rejects (0 and ∞ when
 * none is). Both tests' evidence is monotone in ρ₀, so bisection on log ρ₀ finds the bounds.
 */
export function ratioSequence(windows: readonly Window[], alpha: number, allCanary: number): { low: number; high: number } {
  const bar = Math.log(1 / alpha);
  const bound = (rejects: (logRatio: number) => boolean, fromBelow: boolean) => {
    let lo = -30;
    let hi = 30;
    if (fromBelow ? !rejects(lo) : !rejects(hi)) return fromBelow ? 0 : Infinity;
    // 32 halvings of 60: a bound to 1e-7 of itself.
    for (let i = 0; i < 32; i++) {
      const mid = (lo + hi) / 2;
      if (rejects(mid) === fromBelow) lo = mid;
      else hi = mid;
    }
    return Math.exp(fromBelow ? lo : hi);
  };
  return {
    low: bound((l) => countLogLR(windows, Math.exp(l), COUNT_WORSE_PRIOR, allCanary) >= bar, true),
    high: bound((l) => countLogLR(windows, Math.exp(l), COUNT_BETTER_PRIOR) >= bar, false),
  };
}

/** Clopper-Pearson interval of a proportion k/n at `confidence` (two-sided), for real k and n. */
export function clopperPearson(k: number, n: number, confidence: number): { low: number; high: number } {
  const a = (1 - confidence) / 2;
  return { low: k <= 0 ? 0 : betaQuantile(a, k, n - k + 1), high: k >= n ? 1 : betaQuantile(1 - a, k + 1, n - k) };
}

/** The rate ratio r_c / r_b over the whole window with its fixed-sample interval (∞ when the stable had no errors). */
export function rateRatio(canary: Counts, baseline: Counts, confidence: number): { estimate: number; low: number; high: number } {
  const n = canary.errors + baseline.errors;
  const exposure = baseline.total / canary.total;
  const toRatio = (p: number) => (p >= 1 ? Infinity : (p / (1 - p)) * exposure);
  if (!(n > 0)) return { estimate: Number.NaN, low: 0, high: Infinity };
  const ci = clopperPearson(canary.errors, n, confidence);
  return { estimate: toRatio(canary.errors / n), low: toRatio(ci.low), high: toRatio(ci.high) };
}

/** One-sided exact p (fixed sample): P(X_c ≥ x_c) when the canary's rate is `ratio` × the stable's. */
export function conditionalBinomialP(canary: Counts, baseline: Counts, ratio: number): number {
  return binomSf(canary.errors, canary.errors + baseline.errors, nullShare(canary.total, baseline.total, ratio));
}
