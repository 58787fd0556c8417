// The test files that take longest under CI's CPU burners, longest first: tests/run.ts starts
// them before the rest. node:test hands files to its 3 runners in the order given, and in
// alphabetical order the longest (the lifecycle model, the concurrent writers, the browser
// view) began 10-13 minutes into a 15-minute run. The figures are each file's tests' time in
// one `npm test` with two burners beside it (29 Nov). A file missing here only runs in its
// alphabetical place; a name that no longer exists is ignored.
export const LONG_FILES = [
  'tests/model/lifecycle.test.ts', // 71 s
  'tests/sync/concurrent-writers.test.ts', // 58 s
  'tests/chaos/chaos.test.ts', // 45 s
  'tests/web/deployments.browser.test.ts', // 42 s
  'tests/dev/dev.test.ts', // 35 s
  'tests/cli/binaries.test.ts', // 35 s
  'tests/e2e/lifecycle-analysis.test.ts', // 31 s
  'tests/deploy/overlays.test.ts', // 30 s
  'tests/cli/completion.test.ts', // 28 s
  'tests/web/canary.browser.test.ts', // 28 s
  'tests/dev/root-home.test.ts', // 24 s
  'tests/ha/lossy-failover.test.ts', // 24 s
  'tests/e2e/krane-kill.test.ts', // 21 s
  'tests/sync/feed-fairness.test.ts', // 21 s
  'tests/e2e/otlp.test.ts', // 20 s
  'tests/e2e/canary.test.ts', // 20 s
];
