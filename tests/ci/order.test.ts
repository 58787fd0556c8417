// The orders the runner can ask for (tests/run.ts --shuffle, --each-test): a seed always gives
// the same order, different seeds and files different ones, every test runs exactly once, and
// one test of a file can run alone. Through the real resolve hook and node:test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileSeed, shuffled } from '../helpers/order';

const ROOT = resolve(import.meta.dirname, '../..');
const FIXTURE = 'tests/ci/fixtures/ordered.ts';

/** The parent run's variables a fixture run must not see. */
const INHERITED_NOT = new Set(['NODE_TEST_CONTEXT', 'UNKEY_INFRA_TEST_SHUFFLE_SEED', 'UNKEY_INFRA_TEST_PICK', 'UNKEY_INFRA_TEST_LIST']);

/** Runs the fixture under node:test with the order hook; returns the order its tests ran in. */
function runFixture(env: Record<string, string>): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--import', './tests/helpers/test-order-hooks.mjs', '--test', '--test-reporter=tap', FIXTURE], {
    cwd: ROOT,
    // Without NODE_TEST_CONTEXT: inside a test run it would make the child report to this process.
    // Without the order this file itself runs in (tests/run.ts --shuffle or --each-test set
    // these): the fixture gets only the order each test asks for.
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !INHERITED_NOT.has(k))), ...env },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const m = /ran:([a-e]*)/.exec(r.stdout);
  assert.ok(m, r.stdout);
  return m[1]!;
}

test('a seeded shuffle is a permutation, the same for the same seed, and seeds differ', () => {
  const items = Array.from({ length: 20 }, (_, i) => i);
  const orders = new Set<string>();
  for (let seed = 0; seed < 10; seed++) {
    const s = shuffled(items, seed);
    assert.deepEqual([...s].sort((a, b) => a - b), items, `seed ${seed} keeps every item once`);
    assert.deepEqual(shuffled(items, seed), s, `seed ${seed} replays`);
    orders.add(s.join(','));
  }
  assert.equal(orders.size, 10, 'ten seeds, ten orders');
  assert.notEqual(fileSeed(1, 'tests/a.test.ts'), fileSeed(1, 'tests/b.test.ts'));
  assert.equal(fileSeed(1, 'tests/a.test.ts'), fileSeed(1, 'tests/a.test.ts'));
});

test('the runner shuffles a file\'s tests by the seed: replayable, and every test once', () => {
  const plain = runFixture({});
  assert.equal(plain, 'abcde', 'without a seed, source order');
  const seen = new Set<string>();
  for (const seed of ['1', '2', '3', '4']) {
    const order = runFixture({ UNKEY_INFRA_TEST_SHUFFLE_SEED: seed });
    assert.deepEqual([...order].sort().join(''), 'abcde', `seed ${seed}: ${order}`);
    assert.equal(runFixture({ UNKEY_INFRA_TEST_SHUFFLE_SEED: seed }), order, `seed ${seed} replays`);
    seen.add(order);
  }
  assert.ok(seen.size > 1, `four seeds gave one order: ${[...seen]}`);
});

test('the runner lists a file\'s tests, and runs one of them alone', () => {
  const list = join(mkdtempSync(join(tmpdir(), 'order-')), 'list.json');
  assert.equal(runFixture({ UNKEY_INFRA_TEST_LIST: list }), '', 'listing runs none');
  assert.deepEqual(JSON.parse(readFileSync(list, 'utf8')), ['a', 'b', 'c', 'd', 'e']);
  assert.equal(runFixture({ UNKEY_INFRA_TEST_PICK: '3' }), 'd');
});
