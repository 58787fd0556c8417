import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../../helpers/assert';
import { computeWaves, wavePercentageProblems, DEFAULT_WAVE_PERCENTAGES } from '../../../src/workflow/fleet/waves';

const ids = (n: number) => Array.from({ length: n }, (_, i) => `s${i}`);
const sizes = (w: unknown[][]) => w.map((x) => x.length);

test('computeWaves: wave sizes by cumulative percentage', () => {
  const cases: { n: number; p?: number[]; want: number[] }[] = [
    { n: 100, want: [1, 4, 20, 25, 50] },
    { n: 1000, want: [10, 40, 200, 250, 500] },
    { n: 3, want: [1, 1, 1] },
    { n: 1, want: [1] },
    { n: 2, want: [1, 1] },
    { n: 7, want: [1, 1, 2, 3] },
    { n: 0, want: [] },
    { n: 10, p: [100], want: [10] },
    { n: 10, p: [50, 100], want: [5, 5] },
    { n: 10, p: [10, 30, 60, 100], want: [1, 2, 3, 4] },
    { n: 5, p: [0.5, 100], want: [1, 4] },
  ];
  for (const c of cases) {
    const waves = computeWaves(ids(c.n), c.p ?? DEFAULT_WAVE_PERCENTAGES);
    assert.deepEqual(sizes(waves), c.want, `n=${c.n} p=${c.p ?? 'default'}`);
    assert.deepEqual(waves.flat(), ids(c.n), 'every sentinel exactly once, in order');
    // (No sentinels, no waves: the sizes above say so.)
    if (c.n > 0) assertEvery(waves, (w) => w.length > 0, 'no empty waves');
  }
});

test('computeWaves: duplicate ids are rolled once', () => {
  const waves = computeWaves(['a', 'b', 'a', 'c', 'b'], [50, 100]);
  assert.deepEqual(waves, [['a', 'b'], ['c']]);
});

test('computeWaves: invalid percentages are refused with the reason', () => {
  const bad: [number[], RegExp][] = [
    [[], /at least one/],
    [[1, 5, 25, 50], /last wave must be 100/],
    [[5, 5, 100], /greater than the previous/],
    [[50, 25, 100], /greater than the previous/],
    [[0, 100], /not within/],
    [[-1, 100], /not within/],
    [[50, 150], /not within/],
    [[Number.NaN, 100], /not within/],
  ];
  for (const [p, re] of bad) {
    assert.match(wavePercentageProblems(p).join('; '), re, JSON.stringify(p));
    assert.throws(() => computeWaves(ids(10), p), RangeError);
  }
  assert.deepEqual(wavePercentageProblems([1, 5, 25, 50, 100]), []);
});
