// The judge's statistics against reference numbers. Every number below was computed with SciPy
// 1.17.1 (NumPy 2.4.6) on this machine and written in by hand; the calls are quoted beside them:
// - mannwhitneyu(x, y, alternative=…, method='exact' | 'asymptotic', use_continuity=True)
// - the Hodges-Lehmann intervals by test inversion, independently of the order-statistic
//   formula the code uses: every shift d between two adjacent pairwise differences for which
//   mannwhitneyu(x − d, y, 'two-sided', method=…).pvalue > 0.05, and the differences that bound
//   that set (the estimate: numpy.median of the differences)
// - binomtest(k, n, p, alternative='greater').pvalue, binom.sf, binomtest(...).proportion_ci
//   (method 'exact', Clopper-Pearson), norm.sf / norm.ppf, special.gammaln, special.betaln.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { betaBinomialLogLR, binomSf, clopperPearson, conditionalBinomialP, hodgesLehmann, mannWhitney, msprtFocusedLogLR, msprtLogLR, msprtOneSidedLogLR, normalQuantile, normalSf, rankAutocorrelation } from '../../../../src/workflow/progressive/judge';
import { logGamma } from '../../../../src/workflow/progressive/judge/special';
import { intervalRank } from '../../../../src/workflow/progressive/judge/hodges-lehmann';

const close = (actual: number, expected: number, rel = 1e-6, what = '') =>
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected) + 1e-12, `${what} ${actual} is not ${expected} (rel ${rel})`);

// Two samples of 30 and 25 (numpy.random.default_rng(7), lognormal, rounded to 3 places).
const C30 = [1.001, 1.161, 0.872, 0.641, 0.797, 0.609, 1.031, 1.954, 0.782, 0.733, 1.278, 1.195, 1.054, 0.628, 0.985, 1.416, 0.511, 0.795, 0.387, 0.525, 0.398, 0.889, 0.531, 1.145, 1.082, 0.911, 0.284, 0.764, 0.976, 1.058];
const D25 = [0.628, 1.063, 0.828, 0.901, 2.294, 0.901, 1.328, 2.101, 1.008, 1.277, 1.427, 1.394, 0.732, 1.402, 2.663, 0.623, 2.074, 1.433, 0.979, 3.67, 1.976, 0.741, 1.401, 1.801, 1.228];

test('normal distribution and log-gamma match scipy', () => {
  close(normalSf(2.5), 0.006209665325776132, 1e-6, 'norm.sf(2.5)');
  close(normalSf(7), 1.279812543885835e-12, 1e-6, 'norm.sf(7)');
  close(normalQuantile(0.975), 1.959963984540054, 2e-9, 'norm.ppf(0.975)');
  close(normalQuantile(1e-6), -4.753424308822899, 2e-9, 'norm.ppf(1e-6)');
  close(logGamma(0.3), 1.0957979948180756, 1e-12, 'gammaln(0.3)');
  close(logGamma(10.5), 13.940625219403763, 1e-12, 'gammaln(10.5)');
  close(logGamma(1000.2), 5906.60189425698, 1e-12, 'gammaln(1000.2)');
});

test('Mann-Whitney exact for small untied samples', () => {
  // mannwhitneyu([19,22,16,29,24], [20,11,17,12], 'greater', method='exact') = (17, 0.05555555555555555)
  const a = mannWhitney([19, 22, 16, 29, 24], [20, 11, 17, 12], 'greater');
  assert.equal(a.method, 'exact');
  assert.equal(a.u, 17);
  close(a.pValue, 0.05555555555555555, 1e-12);
  // 7 × 7: (40, 0.026515151515151516)
  const b = mannWhitney([3.1, 4.7, 2.2, 5.9, 6.0, 1.4, 8.8], [2.0, 1.0, 3.0, 0.5, 2.5, 4.0, 1.9], 'greater');
  assert.equal(b.u, 40);
  close(b.pValue, 0.026515151515151516, 1e-12);
});

test('Mann-Whitney with ties: tie-corrected normal approximation with continuity correction', () => {
  const x = [1.1, 2.2, 2.2, 3.5, 4.0, 4.0, 4.0, 5.1, 6.3, 7.7];
  const y = [0.5, 1.1, 2.2, 2.9, 3.0, 3.5, 3.9, 4.0, 4.4];
  // asymptotic 'greater' = (61.5, 0.09414411705877013); 'less' = (61.5, 0.9189267381213891)
  const g = mannWhitney(x, y, 'greater');
  assert.equal(g.method, 'asymptotic');
  assert.equal(g.u, 61.5);
  close(g.pValue, 0.09414411705877013, 1e-6);
  close(mannWhitney(x, y, 'less').pValue, 0.9189267381213891, 1e-6);
  // 25 against 30, asymptotic 'greater' = (573.5, 0.00040855686037973585)
  const big = mannWhitney(D25, C30, 'greater');
  assert.equal(big.u, 573.5);
  close(big.pValue, 0.00040855686037973585, 1e-5);
});

test('Hodges-Lehmann estimate and Moses interval match the inverted Mann-Whitney test', () => {
  // 7 × 7, exact test inverted at 95%: median 2.2, interval [-0.3, 5.0], the 9th difference from each end.
  const e = [3.1, 4.7, 2.2, 5.9, 6.0, 1.4, 8.8];
  const f = [2.0, 1.0, 3.0, 0.5, 2.5, 4.0, 1.9];
  assert.equal(intervalRank(7, 7, 0.95), 9);
  const s = hodgesLehmann(e, f, 0.95);
  close(s.estimate, 2.2, 1e-12);
  close(s.low, -0.3, 1e-9);
  close(s.high, 5.0, 1e-12);
  // 25 × 30, asymptotic test (continuity-corrected) inverted at 95%: median 0.417, [0.197, 0.717], rank 259.
  assert.equal(intervalRank(25, 30, 0.95), 259);
  const t = hodgesLehmann(D25, C30, 0.95);
  close(t.estimate, 0.417, 1e-9);
  close(t.low, 0.197, 1e-9);
  close(t.high, 0.717, 1e-9);
});

test('count rule: conditional binomial test and Clopper-Pearson interval', () => {
  // binom.sf(8, 12, 0.3) = P(X ≥ 9) = 0.0016916554349999992
  close(binomSf(9, 12, 0.3), 0.0016916554349999992, 1e-9);
  // Canary 9 errors of 100 requests, stable 3 of 900, tolerance 10%: p0 = 110/(110+900);
  // binomtest(9, 12, 0.1*1.1/(0.1*1.1+0.9), 'greater').pvalue = 3.4818633098783896e-07
  close(conditionalBinomialP({ errors: 9, total: 100 }, { errors: 3, total: 900 }, 1.1), 3.4818633098783896e-7, 1e-8);
  // binomtest(7, 40).proportion_ci(0.95, 'exact') = (0.07338272935208498, 0.32779013336159446)
  const ci = clopperPearson(7, 40, 0.95);
  close(ci.low, 0.07338272935208498, 1e-8);
  close(ci.high, 0.32779013336159446, 1e-8);
});

test('always-valid evidence: the mixture SPRT closed forms', () => {
  // ln Λ = −½ ln(1 + v) + v z² / (2(1 + v)), v = τ²·I (τ² = 1), computed in Python: z = 3, I = 10 → 2.8919614545099055;
  // z = 1, I = 100 → −1.8125107534701348 (evidence for the null: a large sample with a small z).
  close(msprtLogLR(3, 10), 2.8919614545099055, 1e-12);
  close(msprtLogLR(1, 100), -1.8125107534701348, 1e-12);
  // betaln(k+a, n−k+b) − betaln(a, b) − (k ln p0 + (n−k) ln(1−p0)), k = 9, n = 12, p0 = 0.2, a = 2, b = 8 → 4.259724232539709
  close(betaBinomialLogLR(9, 12, 0.2), 4.259724232539709, 1e-10);
  // One-sided: ln 2 + ln Λ + norm.logcdf(z·√(v/(1+v))), z = 3, I = 10 → 3.5829907775420917.
  close(msprtOneSidedLogLR(3, 10), 3.5829907775420917, 1e-7);
});

test('the focused "canary worse" evidence: its closed form, a lower bar at 20-30 samples, and still a martingale', () => {
  // ln(0.9·exp(0.7·z·√I − 0.7²·I/2) + 0.1·Λ₊(z, I)), Λ₊ the one-sided mixture above, computed in
  // Python with math.erfc: z = 3, I = 10 → 4.144168487160468; z = 2.6, I = 10 → 3.2513875623076527.
  close(msprtFocusedLogLR(3, 10), 4.144168487160468, 1e-7);
  close(msprtFocusedLogLR(2.6, 10), 3.2513875623076527, 1e-7);
  // z = 2.6 at 20 samples a side (I = 10) crosses ln 20 = 3.00 now; the wide mixture alone (2.56) did not.
  assert.ok(msprtFocusedLogLR(2.6, 10) > Math.log(20) && msprtOneSidedLogLR(2.6, 10) < Math.log(20));
  // E[Λ] = 1 under θ = 0 (z ~ N(0, 1)) at any information: what Ville's inequality needs.
  for (const info of [5, 15, 50]) {
    let e = 0;
    // The wide part spreads z over N(0, 1 + I), hence the wide range.
    for (let z = -60; z <= 60; z += 0.002) e += Math.exp(-z * z / 2 + msprtFocusedLogLR(z, info)) * 0.002;
    close(e / Math.sqrt(2 * Math.PI), 1, 1e-6);
  }
});

test('rank autocorrelation: lag-1 of the ranks, zero within the white-noise band', () => {
  // ranks of [1,3,2,5,4,7,6,9,8,11,10,12]: Σ(r_i − m)(r_{i+1} − m) / Σ(r_i − m)² = 0.6171328671328671
  // (scipy.stats.rankdata), above the band 2/√12 = 0.577.
  close(rankAutocorrelation([1, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 12]), 0.6171328671328671, 1e-12);
  // Alternating values: negative lag-1 correlation is never taken as more information.
  assert.equal(rankAutocorrelation([1, 9, 2, 8, 3, 7, 4, 6, 5, 10, 0, 11]), 0);
});
