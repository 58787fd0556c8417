// tests/run.ts's node:test run: `node --import tsx [hooks] tests/helpers/run-files.ts`, told the
// files and settings in UNKEY_INFRA_TEST_RUN (JSON). It calls node:test's run() rather than
// `node --test FILES` because Node 20's CLI sorts the files it is given: the runner's order
// (a --shuffle's) would be lost. Each file still runs in a process of its own, with this
// process's flags (--import, --test-force-exit: run() passes them on). Name patterns and
// --test-only come in the settings: as this process's own flags they would filter the files
// themselves, by path. The per-file timeout is run()'s. The spec reporter writes to stdout, and any failed test makes
// the exit code 1, as the CLI does.
import { run } from 'node:test';
import { spec as Spec } from 'node:test/reporters';

interface RunSettings {
  files: string[];
  concurrency: number;
  /** Per file; 0: none. */
  timeoutMs: number;
  testNamePatterns: string[];
  only: boolean;
}

const s = JSON.parse(process.env.UNKEY_INFRA_TEST_RUN ?? 'null') as RunSettings | null;
if (!s) throw new Error('UNKEY_INFRA_TEST_RUN is not set: run the tests through tests/run.ts');
// Stopped by tests/run.ts (its SIGINT or SIGTERM): the file processes are cancelled with it,
// rather than running on against a PostgreSQL that is being stopped.
const stop = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => stop.abort());
const stream = run({
  signal: stop.signal,
  files: s.files,
  concurrency: s.concurrency,
  ...(s.timeoutMs > 0 ? { timeout: s.timeoutMs } : {}),
  ...(s.testNamePatterns.length ? { testNamePatterns: s.testNamePatterns } : {}),
  ...(s.only ? { only: true } : {}),
});
stream.on('test:fail', (data: { todo?: unknown }) => {
  if (data.todo === undefined || data.todo === false) process.exitCode = 1;
});
stream.compose(new (Spec as unknown as new () => NodeJS.ReadWriteStream)()).pipe(process.stdout);
