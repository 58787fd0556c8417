import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { lagOf, offlinePastGrace, regionStatus, Heartbeat } from '../../src/sync/liveness';
import { KRANE_VERSION } from '../../src/sync/heartbeat';

const t0 = new Date('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

test('regionStatus: never seen, online within the threshold, offline past it', () => {
  const table: [Date | null, number, string][] = [
    [null, 0, 'never_seen'],
    [t0, 0, 'online'],
    [t0, 30_000, 'online'],
    [t0, 30_001, 'offline'],
    [t0, 3_600_000, 'offline'],
    // A clock that reads earlier than the last beat (replica skew) is still online.
    [t0, -5_000, 'online'],
  ];
  for (const [seen, nowMs, want] of table) assert.equal(regionStatus(seen, at(nowMs), 30_000), want, `seen ${seen?.toISOString()} now +${nowMs}`);
});

test('lagOf: pending changes and the age of the oldest in whole seconds', () => {
  const table: [number, Date | null, number, { changes: number; seconds: number }][] = [
    [0, null, 10_000, { changes: 0, seconds: 0 }],
    [3, t0, 10_500, { changes: 3, seconds: 10 }],
    [1, t0, 0, { changes: 1, seconds: 0 }],
    [1, at(5_000), 0, { changes: 1, seconds: 0 }],
    [2, null, 0, { changes: 2, seconds: 0 }],
  ];
  for (const [n, oldest, nowMs, want] of table) assert.deepEqual(lagOf(n, oldest, at(nowMs)), want);
});

test('offlinePastGrace: counts the grace from when the region went quiet or the wait began, whichever is later', () => {
  const after = 30_000;
  const grace = 60_000;
  const table: [string, Date | null, number, number, boolean][] = [
    ['online region', at(0), 0, 10_000, false],
    ['went quiet during the wait, grace not over', at(0), 0, after + grace - 1, false],
    ['went quiet during the wait, grace over', at(0), 0, after + grace, true],
    ['offline long before the wait: still the whole grace', at(0), 1_000_000, 1_000_000 + grace - 1, false],
    ['offline long before the wait, grace over', at(0), 1_000_000, 1_000_000 + grace, true],
    ['never seen, grace from the wait start', null, 5_000, 5_000 + grace, true],
    ['never seen, within grace', null, 5_000, 5_000 + grace - 1, false],
  ];
  for (const [name, seen, startMs, nowMs, want] of table) assert.equal(offlinePastGrace({ lastSeenAt: seen }, at(startMs), at(nowMs), after, grace), want, name);
});

test('Heartbeat schema: accepts a full beat, names bad fields', () => {
  const ok = Heartbeat.parse({ region: 'us-east-1', agentId: 'krane-0', version: '0.1.0', leader: true, cursor: 'e:1:2', objects: { 'StatefulSet/workloads': 3 } });
  assert.deepEqual(ok.objects, { 'StatefulSet/workloads': 3 });
  const bad = Heartbeat.safeParse({ region: 'us-east-1', agentId: '', version: '0.1.0', leader: 'yes', objects: { x: -1 } });
  assert.equal(bad.success, false);
  const fields = bad.error!.issues.map((i) => i.path.join('.')).sort();
  assert.deepEqual(fields, ['agentId', 'leader', 'objects.x']);
});

test('the version krane reports is the package version', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(KRANE_VERSION, pkg.version);
});
