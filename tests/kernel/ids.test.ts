// Ids are parsed in one place: an awakeable id names its invocation and journal position, and
// nothing else parses as one (the API answers 404 for it instead of touching some invocation).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { awakeableId, newId, parseAwakeableId } from '../../src/ids';

test('an awakeable id round-trips to its invocation and position; other strings are refused', () => {
  const inv = newId('inv');
  assert.match(inv, /^inv-[a-z2-7]{16}$/);
  assert.deepEqual(parseAwakeableId(awakeableId(inv, 7)), { invocationId: inv, seq: 7 });
  for (const bad of ['', inv, `awk-${inv.slice(4)}`, `awk-${inv.slice(4)}-x`, `awk-${inv.slice(4).toUpperCase()}-1`, `awk-${inv.slice(4)}-1234567890`, `xawk-${inv.slice(4)}-1`]) {
    assert.equal(parseAwakeableId(bad), null, bad);
  }
});
