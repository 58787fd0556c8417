// The sequential decision: a canary is checked every interval on all data since its first check,
// so a fixed-sample p-value looked at after every check would fail a healthy canary far more
// often than 1 − confidence (ten looks at 5% each fail ~20%). The judge uses always-valid tests
// instead: mixture sequential probability ratio tests (mSPRT; Robbins 1970, Johari et al. 2017),
// whose likelihood ratio Λ is a nonnegative martingale under the null, so P(Λ ever ≥ 1/α) ≤ α
// (Ville's inequality) however many looks are taken and whenever one stops. 1/Λ is the
// always-valid p-value.
//
// For the rank test the statistic is the standardized U, approximately Z ~ N(θ·√I, 1) with
// information I = n1·n2/(n1 + n2); a N(0, τ²) mixture over θ gives the closed form below. τ = 1:
// θ is the shift in standard units of the rank statistic ((AUC − ½)·√12 ranges ±1.7), so the
// mixture spreads evenly over the effects worth catching; a smaller τ would wait longer for big
// effects, a larger one pay more for small ones.

/** τ² of the normal mixture (see above). */
export const MIXTURE_TAU2 = 1;

/** ln Λ of the normal-mixture SPRT for a z-statistic at information `info`. */
export function msprtLogLR(z: number, info: number, tau2 = MIXTURE_TAU2): number {
  if (!(info > 0) || !Number.isFinite(z)) return 0;
  const v = tau2 * info;
  return -0.5 * Math.log1p(v) + (v * z * z) / (2 * (1 + v));
}

/** The always-valid p-value from ln Λ: min(1, 1/Λ). */
export const alwaysValidP = (logLR: number): number => Math.min(1, Math.exp(-logLR));

/** Information of two samples for the rank statistic (the effective sample size). */
export const rankInformation = (n1: number, n2: number): number => (n1 + n2 > 0 ? (n1 * n2) / (n1 + n2) : 0);
