// What the judge reads (issue 37): a query_range answer keeps Prometheus's NaN and ±Inf samples
// (the judge counts them as dropped instead of the read hiding them), with their timestamps; the
// count rule's four series are paired window by window by timestamp, a missing point being NaN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seriesOf } from '../../../../src/workflow/progressive/range-query';
import { pairCounts } from '../../../../src/workflow/progressive/judgement';
import { compareSeries } from '../../../../src/workflow/progressive/judge';

const answer = (values: [number, string][]) => ({ status: 'success', data: { resultType: 'matrix', result: [{ metric: {}, values }] } });

test('non-finite samples reach the judge, which counts them', () => {
  const r = seriesOf(answer([[1700000000, '0.5'], [1700000001, 'NaN'], [1700000002, '+Inf'], [1700000003, '-Inf'], [1700000004.5, '0.25']]));
  assert.ok(r.ok);
  assert.deepEqual(r.values, [0.5, Number.NaN, Infinity, -Infinity, 0.25]);
  assert.deepEqual(r.times, [1700000000000, 1700000001000, 1700000002000, 1700000003000, 1700000004500]);
  const c = compareSeries({ baseline: [...r.values, 1, 2, 3], canary: [1, 2, 3, 4, 5] }, { direction: 'lower-is-better', tolerance: 0.1, confidence: 0.95, minSamples: 3 });
  assert.deepEqual(c.dropped.baseline, { nan: 1, infinite: 2 });
});

test('the count series are paired by timestamp; a window one series lacks is dropped and counted', () => {
  const s = (times: number[], values: number[]) => ({ times, values });
  const input = pairCounts(s([1, 2, 3], [0, 1, 0]), s([1, 2, 3], [90, 90, 90]), s([1, 3], [1, 0]), s([1, 2, 3, 4], [10, 10, 10, 10]));
  assert.deepEqual(input.baseline, [0, 1, 0, Number.NaN]);
  assert.deepEqual(input.canary, [1, Number.NaN, 0, Number.NaN]);
  assert.deepEqual(input.totals, { baseline: [90, 90, 90, Number.NaN], canary: [10, 10, 10, 10] });
  const c = compareSeries(input, { direction: 'lower-is-better', tolerance: 0.1, confidence: 0.95, minSamples: 1 });
  assert.equal(c.baseline.n, 2);
  assert.deepEqual(c.dropped, { baseline: { nan: 1, infinite: 0 }, canary: { nan: 2, infinite: 0 } });
});
