// When an event socket's reader is cut as too slow (src/http/api/slow-client.ts): one that stays
// behind, not one a burst left behind for a moment. The rule before (more than 1 MiB queued at
// any send) is the likeliest reason the reading socket of tests/e2e/events.test.ts fell short
// in a loaded CI run (not confirmed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ALLOWANCE_BYTES, HARD_CAP_BYTES, SLOW_FOR_MS, tooSlow, type Backlog } from '../../src/http/api/slow-client';

test('a burst over the allowance that drains is not cut; the backlog clock starts again after it', () => {
  const b: Backlog = { overSince: undefined };
  assert.equal(tooSlow(b, 2 * ALLOWANCE_BYTES, 1_000), false, 'two allowances queued after a stall');
  assert.equal(tooSlow(b, 3 * ALLOWANCE_BYTES, 1_000 + SLOW_FOR_MS - 1), false, 'still within the time');
  assert.equal(tooSlow(b, ALLOWANCE_BYTES, 1_000 + SLOW_FOR_MS - 1), false, 'drained to the allowance');
  assert.equal(b.overSince, undefined);
  assert.equal(tooSlow(b, 2 * ALLOWANCE_BYTES, 1_000 + SLOW_FOR_MS + 10), false, 'a new burst starts a new clock');
});

test('a reader over the allowance for the whole time, or past the hard cap at once, is cut', () => {
  const b: Backlog = { overSince: undefined };
  assert.equal(tooSlow(b, ALLOWANCE_BYTES + 1, 0), false);
  assert.equal(tooSlow(b, ALLOWANCE_BYTES + 1, SLOW_FOR_MS), true, 'behind for the whole time');
  assert.equal(tooSlow({ overSince: undefined }, HARD_CAP_BYTES + 1, 0), true, 'past the hard cap: memory first');
  assert.equal(tooSlow({ overSince: undefined }, 0, 0), false);
});
