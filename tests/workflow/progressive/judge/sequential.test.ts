// The anytime-valid parts of the judge (issue 37): the mixtures' closed forms, that each is a test
// martingale (expectation 1 under the null, what Ville's inequality needs), the score bars and the
// autocorrelation correction, and the count rule's window-by-window evidence. The fixed-sample
// statistics are checked against SciPy in reference.test.ts; the error control over many looks is
// measured by simulation in bench/judge.ts (docs/progressive-delivery.md has the tables).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countLogLR, msprtLogLR, msprtOneSidedLogLR, priorLogLR, rankAutocorrelation, ratioEstimate, scoreBar, WORSE_PRIOR, type Window } from '../../../../src/workflow/progressive/judge';
import { allCanaryWeight, COUNT_WORSE_PRIOR, COUNT_BETTER_PRIOR, nullShare } from '../../../../src/workflow/progressive/judge/counts';
import { logGamma } from '../../../../src/workflow/progressive/judge/special';

const close = (actual: number, expected: number, rel = 1e-9, what = '') =>
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected) + 1e-12, `${what} ${actual} is not ${expected} (rel ${rel})`);

test('the normal mixtures: closed forms (computed by hand in Python)', () => {
  // ln Λ = −½ ln(1 + v) + v z² / (2(1 + v)), v = τ²·I (τ² = 1): z = 3, I = 10 → 2.8919614545099055;
  // z = 1, I = 100 → −1.8125107534701348 (evidence for the null: a large sample with a small z).
  close(msprtLogLR(3, 10), 2.8919614545099055, 1e-12);
  close(msprtLogLR(1, 100), -1.8125107534701348, 1e-12);
  // One-sided: ln 2 + ln Λ + ln Φ(z·√(v/(1+v))), z = 3, I = 10 → 3.5829907775420917.
  close(msprtOneSidedLogLR(3, 10), 3.5829907775420917, 1e-7);
});

test('the "canary worse" prior: its closed form, and a test martingale at every information', () => {
  // ln(0.8·exp(0.5·z·√I − 0.125·I) + 0.2·exp(0.25·z·√I − 0.03125·I)) at z = 2.6, I = 20:
  // math.log(0.8*math.exp(0.5*2.6*math.sqrt(20)-0.125*20)+0.2*math.exp(0.25*2.6*math.sqrt(20)-0.03125*20)) = 3.1759695773957928
  close(priorLogLR(2.6, 20), 3.1759695773957928, 1e-12);
  assert.deepEqual(WORSE_PRIOR.map((p) => p.weight).reduce((a, b) => a + b, 0), 1);
  // E[Λ] = 1 when z ~ N(0, 1): ∫ φ(z)·Λ(z) dz, numerically.
  for (const info of [5, 20, 100, 400]) {
    let e = 0;
    for (let z = -30; z <= 40; z += 0.001) e += Math.exp(-(z * z) / 2 + priorLogLR(z, info)) * 0.001;
    close(e / Math.sqrt(2 * Math.PI), 1, 1e-6, `E[Λ] at I = ${info}`);
  }
});

test('the score bar is where the evidence reaches 1/α, and lowest where the prior puts its weight', () => {
  for (const info of [10, 25, 100]) close(priorLogLR(scoreBar(priorLogLR, info, 0.05), info), Math.log(20), 1e-9, `bar at ${info}`);
  // θ = 0.5 is tuned for I ≈ 24 (θ√I ≈ √(2 ln 20)): the bar there is near that minimum, 2.45.
  const bar = scoreBar(priorLogLR, 24, 0.05);
  assert.ok(bar > 2.44 && bar < 2.6, `${bar}`);
  assert.ok(scoreBar(priorLogLR, 5, 0.05) > bar && scoreBar(priorLogLR, 400, 0.05) > bar);
  // A test that cannot reach the level at all: no bar.
  assert.equal(scoreBar(() => 0, 10, 0.05), Infinity);
});

test('rank autocorrelation: lag-1 of the ranks with the short-series bias added back, zero within the white-noise band', () => {
  // ranks of [1,3,2,5,4,7,6,9,8,11,10,12]: Σ(r_i − m)(r_{i+1} − m) / Σ(r_i − m)² = 0.6171328671328671
  // (scipy.stats.rankdata), plus (1 + 3·0.617)/12, above the band 2/√12 = 0.577.
  close(rankAutocorrelation([1, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 12]), 0.6171328671328671 + (1 + 3 * 0.6171328671328671) / 12, 1e-12);
  // Alternating values: negative lag-1 correlation is never taken as more information.
  assert.equal(rankAutocorrelation([1, 9, 2, 8, 3, 7, 4, 6, 5, 10, 0, 11]), 0);
  // A slow wave: capped at 0.95.
  assert.equal(rankAutocorrelation(Array.from({ length: 40 }, (_, i) => i)), 0.95);
});

const win = (canaryErrors: number, baselineErrors: number, canaryTotal = 100, baselineTotal = 900): Window => ({ canaryErrors, canaryTotal, baselineErrors, baselineTotal });

test('the count evidence: window by window, a test martingale, and its estimate', () => {
  // One window, 9 canary errors of 12 at a 10% share, ratio 1: Σ_m w_m (p1/p0)^9 ((1 − p1)/(1 − p0))^3.
  const p0 = 0.1;
  let expected = 0;
  for (const { multiplier, weight } of COUNT_WORSE_PRIOR) {
    const p1 = nullShare(100, 900, multiplier);
    expected += weight * (p1 / p0) ** 9 * ((1 - p1) / (1 - p0)) ** 3;
  }
  close(countLogLR([win(9, 3)], 1, COUNT_WORSE_PRIOR), Math.log(expected), 1e-12);
  // E[Λ] = 1 under the null for one window of n errors: Σ_k C(n, k) p0^k (1 − p0)^(n−k) Λ(k).
  for (const n of [1, 5, 30]) {
    let e = 0;
    for (let k = 0; k <= n; k++) {
      const logC = logGamma(n + 1) - logGamma(k + 1) - logGamma(n - k + 1);
      e += Math.exp(logC + k * Math.log(p0) + (n - k) * Math.log1p(-p0) + countLogLR([win(k, n - k)], 1, COUNT_WORSE_PRIOR, 0.3));
    }
    close(e, 1, 1e-9, `E[Λ] with ${n} errors`);
  }
  // Windows without requests or errors say nothing; real counts are exponents.
  close(countLogLR([win(0, 0), win(3, 0, 0, 900)], 1, COUNT_BETTER_PRIOR), 0, 1e-12, 'nothing to say');
  close(countLogLR([win(1.5, 4.5), win(1.5, 4.5)], 1, COUNT_WORSE_PRIOR), countLogLR([win(3, 9)], 1, COUNT_WORSE_PRIOR), 1e-12, 'a smoothed series weighs its events');
  // The estimate, per request: (20/100) / (90/900) = 2×.
  close(ratioEstimate([win(20, 90)]), 2, 1e-9);
  assert.equal(ratioEstimate([win(3, 0)]), Infinity);
});

test('with no stable errors the count test fails on the fewest canary errors an exact one-look test allows', () => {
  // Canary at 10% of requests: 0.1² = 0.01 ≤ 0.05, so 2 errors; the "all on the canary" part gets 0.01/0.05 of the weight.
  const windows = [win(0, 0), win(1, 0), win(1, 0)];
  const w = allCanaryWeight(windows, 0.05);
  close(w, 0.2, 1e-6);
  assert.ok(countLogLR(windows.slice(0, 2), 1, COUNT_WORSE_PRIOR, w) < Math.log(20), 'one error is not enough');
  assert.ok(countLogLR(windows, 1, COUNT_WORSE_PRIOR, w) >= Math.log(20), 'two are');
  // A stable error ends that part's evidence.
  assert.ok(countLogLR([...windows, win(0, 1)], 1, COUNT_WORSE_PRIOR, w) < Math.log(20));
});
