// The feed's closing notice (src/sync/closing.ts): what runStream relies on when ctrl shuts down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Closing } from '../../src/sync/closing';

test('closing calls each subscriber once, not the ones that left, and at once those that come after', () => {
  const c = new Closing();
  const calls: string[] = [];
  c.subscribe(() => calls.push('a'));
  const offB = c.subscribe(() => calls.push('b'));
  offB();
  assert.equal(c.aborted, false);
  c.close();
  c.close();
  assert.deepEqual(calls, ['a']);
  assert.equal(c.aborted, true);
  c.subscribe(() => calls.push('late'));
  assert.deepEqual(calls, ['a', 'late']);
});
