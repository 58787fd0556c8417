// The sequential decision: a canary is checked every interval on all data since its first check,
// so a fixed-sample p-value looked at after every check would fail a healthy canary far more
// often than 1 − confidence (ten looks at 5% each fail ~20%). The judge uses always-valid tests
// instead: mixture sequential probability ratio tests (mSPRT; Robbins 1970, Johari et al. 2017),
// whose likelihood ratio Λ is a nonnegative martingale under the null, so P(Λ ever ≥ 1/α) ≤ α
// (Ville's inequality) however many looks are taken and whenever one stops. 1/Λ is the
// always-valid p-value.
import { normalCdf } from './special';
//
// For the rank test the statistic is the standardized U, approximately Z ~ N(θ·√I, 1) with
// information I = n1·n2/(n1 + n2); a N(0, τ²) mixture over θ gives the closed form below. τ = 1:
// θ is the shift in standard units of the rank statistic ((AUC − ½)·√12 ranges ±1.7), so the
// mixture spreads evenly over the effects worth catching; a smaller τ would wait longer for big
// effects, a larger one pay more for small ones.

/** τ² of the normal mixture (see above). */
export const MIXTURE_TAU2 = 1;

/** ln Λ of the normal-mixture SPRT for a z-statistic at information `info` (two-sided mixture). */
export function msprtLogLR(z: number, info: number, tau2 = MIXTURE_TAU2): number {
  if (!(info > 0) || !Number.isFinite(z)) return 0;
  const v = tau2 * info;
  return -0.5 * Math.log1p(v) + (v * z * z) / (2 * (1 + v));
}

/**
 * ln Λ of the one-sided mixture: the N(0, τ²) mixture restricted to θ > 0 (the canary worse), a
 * proper prior with twice the density there, so Λ₊ = 2·Λ·Φ(z·√(v/(1 + v))). Still a test
 * martingale under θ ≤ 0; it spends no evidence on the side the question is not about, which
 * lowers the bar by about 2·ln 2 in z² against the two-sided mixture.
 */
export function msprtOneSidedLogLR(z: number, info: number, tau2 = MIXTURE_TAU2): number {
  if (!(info > 0) || !Number.isFinite(z)) return 0;
  const v = tau2 * info;
  return Math.LN2 + msprtLogLR(z, info, tau2) + Math.log(Math.max(1e-300, normalCdf(z * Math.sqrt(v / (1 + v)))));
}

/**
 * Where the "canary worse" evidence puts most of its prior: θ = 0.7 in rank units, a canary whose
 * values (less the margin) exceed the stable's in 70% of pairs ((AUC − ½)·√12 = 0.7). Scale-free,
 * so it means the same for any metric's noise. The bench (bench/judge.ts) showed the one-sided
 * N(0, 1) mixture alone needs z ≈ 2.8 at 20 and 30 samples a side, which detects a 2× canary
 * within 3 checks in about 94% of runs; at that information every test trades that rate against
 * the equal canary's false failures, and a prior focused on the effects worth catching quickly
 * moves the bar to z ≈ 2.55 there (97%) for about 0.1 point more of them.
 */
export const FOCUS_THETA = 0.7;
/** The focused part's weight; the rest stays on the wide mixture, so small effects still show. */
export const FOCUS_WEIGHT = 0.9;

/**
 * ln Λ of the "canary worse" evidence: FOCUS_WEIGHT on a point mass at FOCUS_THETA (Wald's SPRT
 * statistic, exp(θ·z·√I − θ²·I/2)) and the rest on the one-sided normal mixture. Any mixture of
 * test martingales is one, so P(Λ ever ≥ 1/α) ≤ α still holds under θ ≤ 0. The point mass alone
 * would never catch an effect below θ/2 (its bar grows like θ·√I/2); the wide part does, later.
 */
export function msprtFocusedLogLR(z: number, info: number, theta = FOCUS_THETA, weight = FOCUS_WEIGHT, tau2 = MIXTURE_TAU2): number {
  if (!(info > 0) || !Number.isFinite(z)) return 0;
  const point = Math.log(weight) + theta * z * Math.sqrt(info) - (theta * theta * info) / 2;
  const wide = Math.log1p(-weight) + msprtOneSidedLogLR(z, info, tau2);
  const top = Math.max(point, wide);
  return top + Math.log(Math.exp(point - top) + Math.exp(wide - top));
}

/**
 * Lag-1 autocorrelation of a series' ranks, or 0 when it is within the white-noise band (2/√n).
 * Prometheus samples of rate() over windows longer than the step overlap, so neighbours are
 * correlated; a rank test that takes them as independent fails healthy canaries (the bench's
 * equal-autocorrelated case). Above the band the judge counts n·(1 − ρ)/(1 + ρ) effective samples
 * (the AR(1) variance inflation); within it, nothing, so independent samples lose no power.
 */
export function rankAutocorrelation(values: readonly number[]): number {
  const n = values.length;
  if (n < 8) return 0;
  const order = values.map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0]);
  const r = new Array<number>(n);
  order.forEach(([, i], k) => (r[i] = k));
  const m = (n - 1) / 2;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    den += (r[i]! - m) ** 2;
    if (i + 1 < n) num += (r[i]! - m) * (r[i + 1]! - m);
  }
  const rho = den > 0 ? num / den : 0;
  return rho > 2 / Math.sqrt(n) ? Math.min(rho, 0.95) : 0;
}

/** The always-valid p-value from ln Λ: min(1, 1/Λ). */
export const alwaysValidP = (logLR: number): number => Math.min(1, Math.exp(-logLR));

/** Information of two samples for the rank statistic (the effective sample size). */
export const rankInformation = (n1: number, n2: number): number => (n1 + n2 > 0 ? (n1 * n2) / (n1 + n2) : 0);
