// The rotation CI uses to run test files alone: every file comes round, slices wrap, and the
// same seed always gives the same slice (so a failure can be rerun).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { daySeed, rotatingSlice } from '../helpers/rotation';

const files = ['e.ts', 'a.ts', 'c.ts', 'b.ts', 'd.ts'];

test('slices start where the seed says, in sorted order, wrapping round', () => {
  for (const [seed, count, want] of [
    [0, 2, ['a.ts', 'b.ts']],
    [1, 2, ['c.ts', 'd.ts']],
    [2, 2, ['e.ts', 'a.ts']],
    [0, 9, ['a.ts', 'b.ts', 'c.ts', 'd.ts', 'e.ts']],
    [-1, 2, ['d.ts', 'e.ts']],
    [3, 0, []],
  ] as const) {
    assert.deepEqual(rotatingSlice(files, seed, count), want, `seed ${seed}, count ${count}`);
  }
  assert.deepEqual(rotatingSlice([], 4, 3), []);
});

test('consecutive seeds cover every file', () => {
  for (const count of [1, 2, 3, 4]) {
    const seen = new Set<string>();
    for (let seed = 0; seed < Math.ceil(files.length / count); seed++) for (const f of rotatingSlice(files, seed, count)) seen.add(f);
    assert.equal(seen.size, files.length, `count ${count}`);
  }
});

test('the same seed gives the same slice; the day seed changes once a day', () => {
  assert.deepEqual(rotatingSlice(files, 7, 2), rotatingSlice([...files].reverse(), 7, 2));
  const noon = Date.UTC(2026, 10, 23, 12);
  assert.equal(daySeed(noon), daySeed(Date.UTC(2026, 10, 23, 23, 59)));
  assert.equal(daySeed(noon) + 1, daySeed(Date.UTC(2026, 10, 24, 0, 1)));
});
