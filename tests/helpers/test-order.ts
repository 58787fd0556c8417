// What test files get for `node:test` when the runner asks for an order (loaded through
// test-order-hooks.mjs): node:test as it is, except that top-level `test()` calls
// are collected and registered
// - shuffled (UNKEY_INFRA_TEST_SHUFFLE_SEED: the run's seed, mixed with the file's path), or
// - one of them alone (UNKEY_INFRA_TEST_PICK=k: the k-th in source order), or
// - none, writing their names to the file UNKEY_INFRA_TEST_LIST (the runner's count for
//   --each-test).
// Calls made together (without an await between them, i.e. before the next macrotask) form
// one batch and are shuffled among themselves; a file that registers tests after a top-level
// await gets each batch shuffled, in batch order (today's files register all theirs at once).
import * as real from 'node:test';
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileSeed, shuffled } from './order';

// The rest of node:test as it is (hooks stay on the file's root, where they were declared).
export const { after, before, afterEach, beforeEach, describe, it, suite, mock, run } = real;

type TestArgs = unknown[];
const register = real.test as unknown as (...args: TestArgs) => Promise<void>;

const seedEnv = process.env.UNKEY_INFRA_TEST_SHUFFLE_SEED;
const pickEnv = process.env.UNKEY_INFRA_TEST_PICK;
const listPath = process.env.UNKEY_INFRA_TEST_LIST;
const file = relative(process.cwd(), process.argv[1] ?? '');
const seed = seedEnv ? fileSeed(Number(seedEnv), file) : undefined;
const pick = pickEnv === undefined || pickEnv === '' ? undefined : Number(pickEnv);

let pending: { index: number; args: TestArgs }[] = [];
let registered = 0;
let batch = 0;
const names: string[] = [];

const nameOf = (args: TestArgs) => (typeof args[0] === 'string' ? args[0] : typeof args[1] === 'string' ? args[1] : '<anonymous>');

function flush(): void {
  const list = pending;
  pending = [];
  if (listPath) {
    names.push(...list.map((p) => nameOf(p.args)));
    writeFileSync(listPath, JSON.stringify(names));
    // One test that does nothing: a file with none never ends its root test, so its `after`
    // hooks (which close the stacks it started) would never run and it would hang.
    void register(`listed ${names.length} tests`, () => {});
    return;
  }
  const chosen = pick !== undefined ? list.filter((p) => p.index === pick) : seed !== undefined ? shuffled(list, seed + batch) : list;
  batch++;
  for (const p of chosen) void register(...p.args);
}

/** node:test's `test`, registered later in the order the runner asked for. */
export function test(...args: TestArgs): Promise<void> {
  if (seed === undefined && pick === undefined && !listPath) return register(...args);
  pending.push({ index: registered++, args });
  if (pending.length === 1) setImmediate(flush);
  return Promise.resolve();
}
export default test;
