// The GC brake's decision (src/kube/gc-brake.ts), table-tested, and its held/approved sets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, GcBrake, withinLimit } from '../../src/kube/gc-brake';

test('withinLimit: refused only past both the share and the handful', () => {
  const rows: [number, number, number, boolean][] = [
    // wouldDelete, managed, maxFraction, allowed
    [0, 0, 0.5, true],
    [9, 10, 0.5, true], // a handful goes
    [10, 10, 0.5, false], // but never every managed object of a small region (an empty database)
    [3, 3, 0.5, false],
    [11, 20, 0.5, false],
    [10, 20, 0.5, true],
    [11, 22, 0.5, true], // exactly half
    [12, 22, 0.5, false],
    [100, 100, 1, true], // brake off
    [20, 20, 0.5, false], // an empty desired state
  ];
  for (const [wouldDelete, managed, maxFraction, allowed] of rows) assert.equal(withinLimit({ wouldDelete, managed, maxFraction }), allowed, JSON.stringify({ wouldDelete, managed, maxFraction }));
});

test('decide: an approval covers exactly the held resources', () => {
  const plan = { wouldDelete: 20, managed: 20, maxFraction: 0.5 };
  assert.deepEqual(decide(plan, new Set(['a', 'b']), new Set()), { run: false });
  assert.deepEqual(decide(plan, new Set(['a', 'b']), new Set(['a', 'b', 'c'])), { run: true, approved: true });
  assert.deepEqual(decide(plan, new Set(['a', 'x']), new Set(['a', 'b'])), { run: false }, 'something new to delete needs a new confirmation');
});

test('GcBrake: holds, confirms once, and the approval is used up', () => {
  const b = new GcBrake(0.5);
  const doomed = new Set(['a', 'b']);
  assert.deepEqual(b.check({ wouldDelete: 20, managed: 20 }, doomed), { run: false });
  assert.equal(b.heldObjects, 20);
  assert.equal(b.confirm(), 20);
  assert.equal(b.heldObjects, 0);
  assert.equal(b.confirm(), 0, 'nothing held, nothing to confirm');
  assert.deepEqual(b.check({ wouldDelete: 20, managed: 20 }, doomed), { run: true, approved: true });
  assert.deepEqual(b.check({ wouldDelete: 20, managed: 20 }, doomed), { run: false }, 'an approval is good for one pass');
});

test('GcBrake: an approval does not outlive the next pass, whatever that pass was', () => {
  const b = new GcBrake(0.5);
  const doomed = new Set(['a', 'b']);
  assert.deepEqual(b.check({ wouldDelete: 20, managed: 20 }, doomed), { run: false });
  b.confirm();
  // The operator fixed the database instead: the next pass is small and runs on its own.
  assert.deepEqual(b.check({ wouldDelete: 1, managed: 20 }, new Set(['c'])), { run: true, approved: false });
  // Days later the same wipe comes back: it needs a new confirmation.
  assert.deepEqual(b.check({ wouldDelete: 20, managed: 20 }, doomed), { run: false });
});
