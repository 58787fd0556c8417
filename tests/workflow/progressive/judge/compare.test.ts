// compareSeries (issues 27, 37): the verdict, its evidence and its reason, on seeded log-normal
// series (the statistics themselves are checked against SciPy in reference.test.ts, the anytime
// tests in sequential.test.ts). The rule: fail when the canary is shown worse than its stable by
// the anytime test and estimated over the tolerance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareSeries, type CompareOptions } from '../../../../src/workflow/progressive/judge';

function series(seed: number, level: number, n: number, sigma = 0.3): number[] {
  let a = seed;
  const u = () => ((a = (Math.imul(a, 48271) >>> 0) % 2147483647) + 0.5) / 2147483647;
  return Array.from({ length: n }, () => level * Math.exp(sigma * Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u())));
}
const O: CompareOptions = { direction: 'lower-is-better', tolerance: 0.1, confidence: 0.95, minSamples: 20 };

test('a canary 3× its stable fails, with the evidence and the reason in words', () => {
  const c = compareSeries({ baseline: series(1, 0.01, 40), canary: series(2, 0.03, 40) }, O);
  assert.equal(c.verdict, 'fail');
  assert.equal(c.method, 'mann-whitney');
  assert.ok(c.pValue! < 0.001, `${c.pValue}`);
  assert.equal(c.baseline.n, 40);
  assert.ok(c.shift!.low > 0.001 && c.shift!.low < c.shift!.estimate && c.shift!.estimate < c.shift!.high);
  assert.match(c.reason, /^canary's value is [23]\.\d× the stable's \(p [<=] [\d.]+, 95% interval [\d.]+×-[\d.]+×\), over tolerance 1\.1×$/);
});

test('equal series pass; a significant but negligible difference passes; a 30% one inside a 50% tolerance passes', () => {
  assert.equal(compareSeries({ baseline: series(3, 0.01, 40), canary: series(4, 0.01, 40) }, O).verdict, 'pass');
  // 4% worse with very little noise: clearly different, but inside the 10% tolerance.
  const small = compareSeries({ baseline: series(5, 0.01, 400, 0.02), canary: series(6, 0.0104, 400, 0.02) }, O);
  assert.equal(small.verdict, 'pass', small.reason);
  assert.ok(small.shift!.low > 0, 'the difference is significant');
  assert.match(small.reason, /within tolerance 1\.1×$/);
  assert.equal(compareSeries({ baseline: series(7, 0.01, 60), canary: series(8, 0.013, 60) }, { ...O, tolerance: 0.5 }).verdict, 'pass');
});

test('too few samples and zero-heavy series without counts are inconclusive, saying why', () => {
  const few = compareSeries({ baseline: series(9, 0.01, 30), canary: series(10, 0.05, 12) }, O);
  assert.equal(few.verdict, 'inconclusive');
  assert.equal(few.reason, 'too few samples: canary 12, stable 30 (need 20 each)');
  const zeros = compareSeries({ baseline: [...Array(30).fill(0), 0.01], canary: [...Array(30).fill(0), 0.02] }, O);
  assert.equal(zeros.verdict, 'inconclusive');
  assert.match(zeros.reason, /mostly zeros.*totalQuery/);
});

test('the count rule: errors given requests, whatever the traffic split', () => {
  const few = new Array(25).fill(0);
  // 0.3% on the canary's 10% of traffic against 0.1% on the stable's 90%.
  const bad = compareSeries({ baseline: few, canary: few, counts: { canary: { errors: 30, total: 10_000 }, baseline: { errors: 90, total: 90_000 } } }, O);
  assert.equal(bad.verdict, 'fail');
  assert.equal(bad.method, 'binomial');
  assert.match(bad.reason, /^canary's error rate is 3\.0× the stable's \(p [<=] 0\.000\d, 95% interval [\d.]+×-[\d.]+×; 30\/10000 against 90\/90000\), over tolerance 1\.1×$/);
  // The same rate on both sides passes, although the canary has nine times fewer errors.
  assert.equal(compareSeries({ baseline: few, canary: few, counts: { canary: { errors: 10, total: 10_000 }, baseline: { errors: 90, total: 90_000 } } }, O).verdict, 'pass');
});

test('higher-is-better: a canary at half the stable fails "under tolerance"', () => {
  const c = compareSeries({ baseline: series(11, 100, 40), canary: series(12, 50, 40) }, { ...O, direction: 'higher-is-better' });
  assert.equal(c.verdict, 'fail');
  assert.match(c.reason, /is 0\.\d+× the stable's .*under tolerance 0\.90×$/);
  assert.equal(compareSeries({ baseline: series(11, 100, 40), canary: series(12, 200, 40) }, { ...O, direction: 'higher-is-better' }).verdict, 'pass');
});

test('promoteEarly: a canary shown within tolerance is an early pass; without the option it is a plain pass', () => {
  const input = { baseline: series(13, 0.01, 200), canary: series(14, 0.008, 200) };
  const early = compareSeries(input, { ...O, promoteEarly: true });
  assert.equal(early.verdict, 'pass');
  assert.equal(early.early, true);
  assert.match(early.reason, /clearly within tolerance 1\.1× \(p [<=] [\d.]+ that it is not\)$/);
  assert.equal(compareSeries(input, O).early, false);
});

/** Checks of ten more samples a side each (as bench/judge.ts): the first failing check, or null. */
function firstFail(b: number[], c: number[], checks: number): number | null {
  for (let k = 1; k <= checks; k++) if (compareSeries({ baseline: b.slice(0, 10 * k), canary: c.slice(0, 10 * k) }, O).verdict === 'fail') return k;
  return null;
}

test('a 2× canary (noise ±65%) fails within 3 checks in at least 96% of 400 seeded runs; an equal one in under 5% of 10 checks', () => {
  let detected = 0;
  let equal = 0;
  for (let i = 0; i < 400; i++) {
    if ((firstFail(series(1000 + i, 0.01, 30, 0.5), series(5000 + i, 0.02, 30, 0.5), 3) ?? 9) <= 3) detected++;
    if (firstFail(series(9000 + i, 0.01, 100, 0.5), series(13000 + i, 0.01, 100, 0.5), 10) !== null) equal++;
  }
  assert.ok(detected >= 384, `${detected} of 400 detected within 3 checks`);
  assert.ok(equal <= 20, `${equal} of 400 equal canaries failed`);
});

test('an environment-wide degradation (both 4× worse and noisier from check 4) fails no run that the same draws without it pass', () => {
  let caused = 0;
  for (let i = 0; i < 200; i++) {
    // Same draws, then both sides scaled (and spread) alike from the 31st sample on.
    const zb = series(20000 + i, 1, 100, 1).map(Math.log);
    const zc = series(24000 + i, 1, 100, 1).map(Math.log);
    const level = (z: number[], degraded: boolean) => z.map((v, j) => (degraded && j >= 30 ? 0.04 * Math.exp(0.8 * v) : 0.01 * Math.exp(0.5 * v)));
    const degraded = firstFail(level(zb, true), level(zc, true), 10);
    // Caused by it: failed earlier than the same draws without it (or they never failed).
    if (degraded !== null && degraded < (firstFail(level(zb, false), level(zc, false), 10) ?? Infinity)) caused++;
  }
  assert.equal(caused, 0);
});

const small = { ...O, minSamples: 3 };

test('samples that are not numbers are left out and counted in the evidence, saying why', () => {
  const b = [...series(31, 0.01, 40), Number.NaN, Number.NaN, Infinity];
  const c = [...series(32, 0.01, 40), Number.NaN];
  const r = compareSeries({ baseline: b, canary: c }, O);
  assert.equal(r.baseline.n, 40);
  assert.equal(r.canary.n, 40);
  assert.deepEqual(r.dropped, { baseline: { nan: 2, infinite: 1 }, canary: { nan: 1, infinite: 0 } });
  assert.match(r.reason, /\(dropped: 1 canary sample NaN, 2 stable samples NaN, 1 stable sample ±Inf\)$/);
  // Too few once they are gone: the reason says what went.
  const few = compareSeries({ baseline: [...series(33, 0.01, 19), Number.NaN], canary: series(34, 0.01, 30) }, O);
  assert.equal(few.verdict, 'inconclusive');
  assert.equal(few.reason, 'too few samples: canary 30, stable 19 (need 20 each); dropped: 1 stable sample NaN');
});

test('an interval the samples cannot reach is marked, with what it covers (3 a side: 90%, not 95%)', () => {
  const r = compareSeries({ baseline: [1, 2, 3], canary: [1.5, 2.5, 3.5] }, small);
  assert.equal(r.shift!.reachable, false);
  assert.ok(Math.abs(r.shift!.coverage - 0.9) < 1e-12, `${r.shift!.coverage}`);
  assert.deepEqual([r.shift!.low, r.shift!.high], [-1.5, 2.5]);
  assert.match(r.reason, /interval [\d.]+×-[\d.]+× covers only 90%: too few samples for 95%/);
  const four = compareSeries({ baseline: [1, 2, 3, 4], canary: [1.5, 2.5, 3.5, 4.5] }, small);
  assert.equal(four.shift!.reachable, true);
  assert.ok(four.shift!.coverage >= 0.95);
  // The anytime interval is unbounded until the test could reject anything at all.
  assert.deepEqual(r.shift!.anytime, { low: -Infinity, high: Infinity });
});

test('small samples are judged on the exact distribution of U: 8 against 8 wholly above fails, which the normal approximation would not', () => {
  const b = [0.88, 1.21, 0.53, 1.66, 0.71, 1.02, 0.37, 1.39];
  const c = [2.05, 2.62, 2.71, 3.02, 1.94, 1.83, 2.2, 2.44];
  const r = compareSeries({ baseline: b, canary: c }, { ...O, minSamples: 8 });
  assert.equal(r.verdict, 'fail', r.reason);
  // U's exact p = 1/C(16, 8) = 7.8e-5, as a score −Φ⁻¹(p) = 3.782; at 4 units of information the
  // evidence is Λ = 22.479 (sequential.ts's prior), p = 1/Λ. The normal approximation's score,
  // 3.308, gives Λ = 14.19: a pass.
  assert.ok(Math.abs(r.pValue! - 1 / 22.478733834736026) < 1e-9, `${r.pValue}`);
});

/** Errors and requests per window for both sides. */
const countWindows = (n: number, f: (i: number) => { be: number; bt: number; ce: number; ct: number }) => {
  const w = Array.from({ length: n }, (_, i) => f(i));
  return { baseline: w.map((x) => x.be), canary: w.map((x) => x.ce), totals: { baseline: w.map((x) => x.bt), canary: w.map((x) => x.ct) } };
};

test("the count rule conditions window by window: a step to 50% during an incident on both is not the canary’s fault", () => {
  // 0.5% errors on both; the step from 10% to 50% at window 20, both ×5 from window 25. Summed over
  // the window the canary has 55% of the errors against 38% of the requests.
  const input = countWindows(40, (i) => {
    const share = i < 20 ? 0.1 : 0.5;
    const rate = 0.005 * (i >= 25 ? 5 : 1);
    return { bt: 1000 * (1 - share), be: 1000 * (1 - share) * rate, ct: 1000 * share, ce: 1000 * share * rate };
  });
  const r = compareSeries(input, O);
  assert.equal(r.method, 'binomial');
  assert.equal(r.verdict, 'pass', r.reason);
  assert.ok(Math.abs(r.shift!.estimate) < 1e-9, `${r.shift!.estimate}`);
  // The same windows summed into one: failed.
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const summed = compareSeries({ baseline: input.baseline, canary: input.canary, counts: { baseline: { errors: sum(input.baseline), total: sum(input.totals.baseline) }, canary: { errors: sum(input.canary), total: sum(input.totals.canary) } } }, O);
  assert.equal(summed.verdict, 'fail');
});

test('with no stable errors, the fewest canary errors an exact test allows fail (2 at 10% of traffic)', () => {
  const at = (k: number) => compareSeries(countWindows(20, (i) => ({ bt: 900, be: 0, ct: 100, ce: i === 19 ? k : 0 })), O);
  assert.equal(at(1).verdict, 'pass');
  const two = at(2);
  assert.equal(two.verdict, 'fail', two.reason);
  assert.match(two.reason, /^canary's error rate is 0\.001 against the stable's 0 \(p = 0\.0\d, 95% interval of the difference 0 to ∞; 2\/2000 against 0\/18000\), over tolerance 1\.1×$/);
});

test('real counts (increase() extrapolates): the fixed interval is Clopper-Pearson by beta quantiles', () => {
  // 3.7 canary errors of 12.4 in all, 1,000 requests against 9,000: the share's bounds from
  // scipy.stats.beta.ppf (reference.test.ts) turned into rate differences.
  const r = compareSeries({ baseline: new Array(20).fill(0), canary: new Array(20).fill(0), counts: { canary: { errors: 3.7, total: 1000 }, baseline: { errors: 8.7, total: 9000 } } }, O);
  const rb = 8.7 / 9000;
  const toShift = (p: number) => ((p / (1 - p)) * 9 - 1) * rb;
  assert.ok(Math.abs(r.shift!.low - toShift(0.08203303049865562)) < 1e-12, `${r.shift!.low}`);
  assert.ok(Math.abs(r.shift!.high - toShift(0.6132548928921335)) < 1e-12, `${r.shift!.high}`);
  assert.match(r.reason, /; 3\.7\/1000 against 8\.7\/9000\)/);
});

test('a canary exactly at the tolerance fails at most half the time however many checks (evidence 2 against the boundary, not the estimate alone)', () => {
  // 1.2× with tolerance 0.2 (σ 0.3), 40 checks of ten samples: shown worse than the stable at
  // once, its estimate on the boundary; judged on the estimate alone it failed 86% of such runs.
  const o = { ...O, tolerance: 0.2 };
  let failed = 0;
  for (let i = 0; i < 100; i++) {
    const b = series(30000 + i, 0.01, 400);
    const c = series(40000 + i, 0.012, 400);
    for (let k = 2; k <= 40; k++) {
      if (compareSeries({ baseline: b.slice(0, 10 * k), canary: c.slice(0, 10 * k) }, o).verdict === 'fail') {
        failed++;
        break;
      }
    }
  }
  assert.ok(failed <= 50, `${failed} of 100 at the tolerance failed`);
});
