// The short fixed-seed version of `npm run bench:chaos`: one schedule of real processes (its own
// PostgreSQL, because the schedule restarts it; two ctrl replicas; two regions of kube-sim and
// krane) under faults, then the invariants. Seed 7 kills a ctrl replica, restarts PostgreSQL,
// black-holes a krane→ctrl and a ctrl→PostgreSQL link, cuts a feed stream (once mid-line) and
// slows a Kubernetes API down. The workload includes canaries and blue-greens (a progressive lane
// gated on a stand-in Prometheus) and autoscaled deployments, and the traffic rules are sampled
// throughout. One schedule, because two did not fit 3 minutes when the rest of
// the suite shares the 2-core machine (`npm run bench:chaos` runs the long version).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureBundle } from '../helpers/bundle';
import { runChaos } from '../../bench/chaos/main';

const SEED = 7;
const SCHEDULES = 1;
const DURATION_MS = 20_000;
/** Shorter than the bench's settle time, so a failing schedule still reports within the budget. */
const SETTLE_MS = 40_000;

test('chaos: a fixed-seed schedule ends with zero violations', { timeout: 180_000 }, async () => {
  ensureBundle();
  const report = await runChaos({ seed: SEED, schedules: SCHEDULES, durationMs: DURATION_MS, settleMs: SETTLE_MS });
  // The workload did work: without deployments the invariants would hold vacuously.
  assert.ok((report.outcome.deployments.ready ?? 0) > 0, `no deployment became ready: ${JSON.stringify(report.outcome)}`);
  // Canaries and blue-greens walked to an end (issue 23): the traffic rules were judged on walks.
  const walked = Object.entries(report.outcome.progressive).filter(([k]) => /^(canary|blue-green):(ready|rolled_back)$/.test(k));
  assert.ok(walked.length > 0, `no canary or blue-green ended: ${JSON.stringify(report.outcome.progressive)}`);
  // Autoscaled deployments were among them (issue 33): convergence allowed their autoscalers'
  // replica counts and checked their routes against the ready pods.
  assert.ok(Object.keys(report.outcome.autoscaled ?? {}).length > 0, `no autoscaled deployment: ${JSON.stringify(report.outcome)}`);
  assert.ok(Object.values(report.faultsByKind).reduce((a, b) => a + b, 0) >= 5, 'the schedule injected faults');
  assert.deepEqual(report.faultErrors, []);
  assert.deepEqual(report.violations, [], JSON.stringify(report, null, 2));
});
