// compareSeries (issue 27): the verdict, its evidence and its reason, on seeded log-normal series
// (the statistics themselves are checked against reference numbers in statistics.test.ts).
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
  assert.match(bad.reason, /^canary's error rate is 3\.0× the stable's \(p = 0\.000\d, 95% interval [\d.]+×-[\d.]+×; 30\/10000 against 90\/90000\), over tolerance 1\.1×$/);
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

test('a 2× canary (noise ±65%) fails within 3 checks in at least 96% of 400 seeded runs; one at the tolerance in under 5% of 10 checks', () => {
  // The wide mixture alone failed 376 of these 400 runs within 3 checks (the 20- and 30-sample
  // looks, z ≈ 2.8 needed); the focused evidence needs z ≈ 2.55 there (sequential.ts).
  let detected = 0;
  let atTolerance = 0;
  for (let i = 0; i < 400; i++) {
    if ((firstFail(series(1000 + i, 0.01, 30, 0.5), series(5000 + i, 0.02, 30, 0.5), 3) ?? 9) <= 3) detected++;
    if (firstFail(series(9000 + i, 0.01, 100, 0.5), series(13000 + i, 0.011, 100, 0.5), 10) !== null) atTolerance++;
  }
  assert.ok(detected >= 384, `${detected} of 400 detected within 3 checks`);
  assert.ok(atTolerance <= 20, `${atTolerance} of 400 at the tolerance failed`);
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
