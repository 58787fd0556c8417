// The short fixed-seed version of `npm run bench:chaos`: two schedules of real processes (its own
// PostgreSQL, because the schedules restart it; two ctrl replicas; two regions of kube-sim and
// krane) under faults, then the invariants. Seed 7 gives schedules 7 and 8, which together
// kill a ctrl replica, restart PostgreSQL, terminate ctrl's sessions, cut ctrl's database link,
// black-hole both kinds of link, cut a feed stream mid-line and slow a Kubernetes API down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureBundle } from '../helpers/bundle';
import { runChaos } from '../../bench/chaos/main';

const SEED = 7;
const SCHEDULES = 2;
const DURATION_MS = 20_000;
/** Shorter than the bench's settle time, so two schedules fit the 3-minute budget even when they fail. */
const SETTLE_MS = 40_000;

test('chaos: fixed-seed schedules end with zero violations', { timeout: 180_000 }, async () => {
  ensureBundle();
  const report = await runChaos({ seed: SEED, schedules: SCHEDULES, durationMs: DURATION_MS, settleMs: SETTLE_MS });
  // The workload did work: without deployments the invariants would hold vacuously.
  assert.ok((report.outcome.deployments.ready ?? 0) > 0, `no deployment became ready: ${JSON.stringify(report.outcome)}`);
  assert.ok(Object.values(report.faultsByKind).reduce((a, b) => a + b, 0) >= 10, 'the schedules injected faults');
  assert.deepEqual(report.faultErrors, []);
  assert.deepEqual(report.violations, [], JSON.stringify(report, null, 2));
});
