// `npm test`: starts one real PostgreSQL, migrates a template database, runs every
// tests/**/*.test.ts with node:test (through tsx), and stops PostgreSQL however the run ends.
// Arguments narrow the run: `npm test -- tests/store` or a file path; node:test flags
// (`--test-name-pattern=…`) are passed on. Orders (Node 20's node:test has no shuffle):
// - `--shuffle[=SEED]` runs the files, and each file's tests, in an order drawn from SEED
//   (printed; random when not given, or UNKEY_INFRA_TEST_SHUFFLE_SEED), so a test that only
//   passes after another one fails, and the printed seed replays the order;
// - `--each-test` runs every test of the given files alone, each in a run of its own;
// - `--alone=N` runs N of the files each in a run of its own (a rotating slice, seed
//   UNKEY_INFRA_ALONE_SEED or the day), so a file that only passes after another one shows up
//   in CI.
// The test orders come from tests/helpers/test-order.ts, which the files get for `node:test`
// through a resolve hook (test-order-hooks.mjs) only when an order is asked for.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { startPostgres } from './helpers/postgres';
import { prepareTemplate } from './helpers/db';
import { daySeed, rotatingSlice } from './helpers/rotation';
import { shuffled } from './helpers/order';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { randomInt } from 'node:crypto';

function findTests(path: string): string[] {
  const st = statSync(path);
  if (st.isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((name) => (name === 'node_modules' ? [] : findTests(join(path, name))));
}

const root = resolve(import.meta.dirname, '..');
const targets = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const testFlags = process.argv.slice(2).filter((a) => a.startsWith('--test-'));
// Name patterns and --test-only go to node:test's run() (tests/helpers/run-files.ts), and so
// does --test-concurrency; --test-force-exit is a node flag its file processes inherit. The
// others (reporters, shards, timeouts) the run does not take: refused, not silently dropped.
const namePatterns = testFlags.filter((a) => a.startsWith('--test-name-pattern=')).map((a) => a.slice('--test-name-pattern='.length));
const concurrencyFlag = testFlags.find((a) => a.startsWith('--test-concurrency='))?.slice('--test-concurrency='.length);
const unsupported = testFlags.filter((a) => !(a.startsWith('--test-name-pattern=') || a.startsWith('--test-concurrency=') || a === '--test-only' || a === '--test-force-exit'));
if (unsupported.length) throw new Error(`tests/run.ts does not take ${unsupported.join(' ')} (it takes --test-name-pattern=…, --test-only, --test-concurrency=N, --test-force-exit)`);
const nodeTestFlags = testFlags.filter((a) => a === '--test-force-exit');
const alone = Number(/^--alone=(\d+)$/.exec(process.argv.slice(2).find((a) => a.startsWith('--alone=')) ?? '')?.[1] ?? 0);
const seed = Number(process.env.UNKEY_INFRA_ALONE_SEED ?? daySeed());
const shuffleArg = process.argv.slice(2).find((a) => a === '--shuffle' || a.startsWith('--shuffle='));
const shuffleSeed = shuffleArg ? Number(shuffleArg.split('=')[1] ?? process.env.UNKEY_INFRA_TEST_SHUFFLE_SEED ?? randomInt(2 ** 31)) : undefined;
if (shuffleSeed !== undefined && !Number.isInteger(shuffleSeed)) throw new Error(`--shuffle takes a whole number seed (got ${shuffleArg})`);
const eachTest = process.argv.includes('--each-test');
const found = (targets.length ? targets : [join(root, 'tests')]).flatMap((t) => findTests(resolve(t)));
const picked = alone ? rotatingSlice(found, seed, alone) : found;
const files = shuffleSeed !== undefined ? shuffled(picked, shuffleSeed) : picked;
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

// Test files mostly wait on Postgres and sockets, so more than one per core pays off; the
// default (cores - 1) would run one file at a time on the 2-core CI machine.
const concurrency = concurrencyFlag ?? process.env.UNKEY_INFRA_TEST_CONCURRENCY ?? '3';
if (!(Number.isInteger(Number(concurrency)) && Number(concurrency) >= 1)) throw new Error(`the test concurrency must be a positive whole number (got ${concurrency})`);

// A file that hangs (a test that never settles, or a handle left open after its tests) would
// otherwise hold the whole run until CI's own limit: once a stuck informer held it for 15
// minutes. Each file gets FILE_TIMEOUT_S (run()'s timeout, which bounds each file's process as a
// whole: its tests have none of their own), then fails, named. Not --test-force-exit: Node 20 exits once
// the tests it knows of have ended, and a file that registers more after a top-level await
// (most of ours) silently lost them: 9 tests of 836 never ran.
// No file comes near 7 minutes in a whole run; the long model run (FC_NUM_RUNS) turns the limit off.
const FILE_TIMEOUT_S = Number(process.env.UNKEY_INFRA_TEST_FILE_TIMEOUT_S ?? (process.env.FC_NUM_RUNS ? 0 : 420));
if (!(Number.isInteger(FILE_TIMEOUT_S) && FILE_TIMEOUT_S >= 0)) throw new Error(`UNKEY_INFRA_TEST_FILE_TIMEOUT_S must be a whole number of seconds, 0 for none (got ${process.env.UNKEY_INFRA_TEST_FILE_TIMEOUT_S})`);

// The feed sends a change only once every older write transaction on the whole server has ended
// (pg_snapshot_xmin is cluster-wide), so on the shared server one session left idle inside a
// transaction, by any file, would hold back every other file's feed: their deployments wait for
// agents that never hear of them. The server ends such a session after 15 s, and the file that
// left it sees the error instead of the others timing out. Tests that hold a transaction open
// on purpose, while they poll for the effect, raise it for that transaction (SET LOCAL) or run
// on a server of their own (testDb isolated).
const server = await startPostgres({ settings: { idle_in_transaction_session_timeout: '15s' } });
let code = 1;
/** The node:test runs under way: stopped before PostgreSQL, so no file runs on against it. */
const running = new Set<ReturnType<typeof spawn>>();
const stop = async () => {
  await Promise.all(
    [...running].map(
      (c) =>
        new Promise<void>((r) => {
          if (c.exitCode !== null || c.signalCode !== null) return r();
          const hard = setTimeout(() => (c.kill('SIGKILL'), r()), 10_000);
          c.once('exit', () => (clearTimeout(hard), r()));
          c.kill('SIGTERM');
        }),
    ),
  );
  await server.stop();
};
process.on('SIGINT', () => void stop().then(() => process.exit(130)));
process.on('SIGTERM', () => void stop().then(() => process.exit(143)));
const orderHooks = join(root, 'tests/helpers/test-order-hooks.mjs');
/** node:test's run() over the files in the order given (tests/helpers/run-files.ts says why). */
const runFiles = join(root, 'tests/helpers/run-files.ts');
/** One node:test run over `list`; resolves to its exit code. `order` (the env test-order.ts
 *  reads) shuffles, picks or lists the files' tests. */
const runTests = (list: string[], fileConcurrency: string, order: Record<string, string> = {}) =>
  new Promise<number>((resolveCode) => {
    const hooks = Object.keys(order).length ? ['--import', orderHooks] : [];
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', ...hooks, ...nodeTestFlags, runFiles],
      {
        cwd: root,
        stdio: 'inherit',
        env: {
          ...process.env,
          ...order,
          UNKEY_INFRA_TEST_PG_URL: server.adminUrl,
          UNKEY_INFRA_TEST_RUN: JSON.stringify({ files: list.map((f) => relative(root, f)), concurrency: Number(fileConcurrency), timeoutMs: FILE_TIMEOUT_S * 1000, testNamePatterns: namePatterns, only: testFlags.includes('--test-only') }),
        },
      },
    );
    running.add(child);
    child.on('exit', (c, sig) => {
      running.delete(child);
      resolveCode(c ?? (sig ? 1 : 0));
    });
  });

try {
  await prepareTemplate(server);
  if (eachTest) code = await runEachTest(files);
  else if (!alone) {
    if (shuffleSeed !== undefined) console.log(`test order shuffled: --shuffle=${shuffleSeed} replays it`);
    code = await runTests(files, concurrency, shuffleSeed !== undefined ? { UNKEY_INFRA_TEST_SHUFFLE_SEED: String(shuffleSeed) } : {});
    if (shuffleSeed !== undefined) console.log(`test order was shuffled: --shuffle=${shuffleSeed} replays it`);
  } else {
    console.log(`running ${files.length} of ${found.length} test files alone (UNKEY_INFRA_ALONE_SEED=${seed}): ${files.map((f) => relative(root, f)).join(' ')}`);
    const failed = await twoAtATime(files.map((f) => ({ label: relative(root, f), run: () => runTests([f], '1') })));
    if (failed.length) console.error(`failed when run alone (UNKEY_INFRA_ALONE_SEED=${seed}): ${failed.join(' ')}`);
    code = failed.length ? 1 : 0;
  }
} finally {
  await stop();
}
process.exit(code);

/** Runs `jobs` two at a time (one per core), each a node:test run of its own; returns the
 *  labels of those that failed. */
async function twoAtATime(jobs: { label: string; run: () => Promise<number> }[]): Promise<string[]> {
  const queue = [...jobs];
  const failed: string[] = [];
  await Promise.all(
    [0, 1].map(async () => {
      for (let j = queue.shift(); j; j = queue.shift()) if ((await j.run()) !== 0) failed.push(j.label);
    }),
  );
  return failed;
}

/** --each-test: lists each file's tests (a run that registers none), then runs each alone. */
async function runEachTest(list: string[]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'unkey-infra-tests-'));
  const jobs: { label: string; run: () => Promise<number> }[] = [];
  for (const [i, f] of list.entries()) {
    const listFile = join(dir, `${i}.json`);
    await runTests([f], '1', { UNKEY_INFRA_TEST_LIST: listFile });
    const names = JSON.parse(readFileSync(listFile, 'utf8')) as string[];
    names.forEach((name, k) => jobs.push({ label: `${relative(root, f)} #${k} "${name}"`, run: () => runTests([f], '1', { UNKEY_INFRA_TEST_PICK: String(k) }) }));
  }
  console.log(`running ${jobs.length} tests of ${list.length} files each alone`);
  const failed = await twoAtATime(jobs);
  if (failed.length) console.error(`failed when run alone:\n  ${failed.join('\n  ')}`);
  else console.log(`all ${jobs.length} tests passed alone`);
  return failed.length ? 1 : 0;
}
