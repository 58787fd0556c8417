// The driver tests/run.ts runs every file through (tests/helpers/run-files.ts, node:test's
// run()): it keeps the order it is given (Node 20's CLI sorts), and its exit code says whether
// anything failed, a file that crashes included, as the CLI's does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
/** The parent run's variables a fixture run must not see. */
const INHERITED_NOT = new Set(['NODE_TEST_CONTEXT', 'UNKEY_INFRA_TEST_RUN', 'UNKEY_INFRA_TEST_SHUFFLE_SEED', 'UNKEY_INFRA_TEST_PICK', 'UNKEY_INFRA_TEST_LIST']);

function drive(files: string[]): { status: number | null; out: string } {
  const run = { files: files.map((f) => `tests/ci/fixtures/${f}.ts`), concurrency: 1, timeoutMs: 60_000, testNamePatterns: [], only: false };
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'tests/helpers/run-files.ts'], {
    cwd: ROOT,
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !INHERITED_NOT.has(k))), UNKEY_INFRA_TEST_RUN: JSON.stringify(run) },
    encoding: 'utf8',
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

test('the driver runs the files in the order given, not sorted, and passes when they pass', () => {
  const r = drive(['run-b', 'run-a']);
  assert.equal(r.status, 0, r.out);
  const b = r.out.indexOf('fixture b');
  const a = r.out.indexOf('fixture a');
  assert.ok(b >= 0 && a > b, `b before a:\n${r.out}`);
});

test('a failing test, or a file that crashes, makes the driver exit 1', () => {
  const failing = drive(['run-a', 'run-fails']);
  assert.equal(failing.status, 1, failing.out);
  assert.match(failing.out, /fixture fails/);
  const crashing = drive(['run-crashes', 'run-a']);
  assert.equal(crashing.status, 1, crashing.out);
  assert.match(crashing.out, /fixture a/);
});
