// `npm run bench`: runs every bench/*.ts benchmark (except this file and helpers) one after
// another, each in its own process so one benchmark's heap and sockets never skew the next,
// then prints one table of the headline figures (engine, feed, deploy, rollout, canary
// rollback) with the last recorded values beside them, saying which moved by more than the
// noise seen across the three recorded runs. Then the benchmarks' JSON, as one object, last.
//
//   npm run bench [-- engine feed]          only the named benchmarks
//   npm run bench -- --runs 3               each benchmark three times (the table shows the median)
//   npm run bench -- --runs 3 --record      also writes bench/baseline.json from these runs
//
// The chaos harness runs only when named: its default of 100 schedules takes hours. A figure
// "moved" when it differs from the recorded median by more than the recorded runs' spread
// (max - min): on a shared 2-core machine a smaller threshold would cry wolf.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { HEADLINES, compareFigures, formatTable, median, type Baseline } from './_headlines';

const dir = import.meta.dirname;
const BASELINE = join(dir, 'baseline.json');
const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(name);
const runsArg = argv.find((a, i) => argv[i - 1] === '--runs' || a.startsWith('--runs='));
const runs = Number(runsArg?.replace('--runs=', '') ?? 1);
if (!(Number.isInteger(runs) && runs >= 1 && runs <= 10)) {
  console.error(`bench: --runs takes 1 to 10 (got ${runsArg})`);
  process.exit(2);
}
const only = argv.filter((a, i) => !a.startsWith('--') && argv[i - 1] !== '--runs');
const ONLY_WHEN_NAMED = new Set(['chaos.ts']);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_'))
  .filter((f) => (only.length === 0 ? !ONLY_WHEN_NAMED.has(f) : only.includes(f.replace(/\.ts$/, ''))))
  .sort();

/** Each benchmark's JSON, per run. */
const results: Record<string, unknown[]> = {};
for (let r = 0; r < runs; r++) {
  for (const f of files) {
    process.stderr.write(`[bench] ${f} (run ${r + 1} of ${runs})\n`);
    const p = spawnSync(process.execPath, ['--import', 'tsx', join(dir, f)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });
    const last = p.stdout.trim().split('\n').pop() ?? '';
    let json: unknown;
    try {
      json = JSON.parse(last);
    } catch {
      json = { bench: f, error: `exit ${p.status}, no JSON on the last line of stdout` };
    }
    (results[f.replace(/\.ts$/, '')] ??= []).push(json);
  }
}

/** Every headline figure's values over the runs (missing where its benchmark did not run). */
const values: Record<string, number[]> = {};
for (const h of HEADLINES) {
  const xs = (results[h.bench] ?? []).map((j) => h.pick(j)).filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  if (xs.length) values[h.key] = xs;
}
const baseline: Baseline | null = existsSync(BASELINE) ? (JSON.parse(readFileSync(BASELINE, 'utf8')) as Baseline) : null;
const rows = compareFigures(values, baseline);
process.stdout.write(formatTable(rows, baseline) + '\n');

if (flag('--record')) {
  const recorded: Baseline = {
    recorded: new Date().toISOString().slice(0, 10),
    runs,
    note: 'written by npm run bench -- --runs N --record',
    figures: Object.fromEntries(Object.entries(values).map(([k, xs]) => [k, { values: xs, median: median(xs), noise: Math.max(...xs) - Math.min(...xs) }])),
  };
  // Figures of benchmarks not run this time keep their last record.
  for (const [k, v] of Object.entries(baseline?.figures ?? {})) recorded.figures[k] ??= v;
  writeFileSync(BASELINE, JSON.stringify(recorded, null, 2) + '\n');
  process.stderr.write(`[bench] recorded ${Object.keys(values).length} figures in ${BASELINE}\n`);
}

console.log(JSON.stringify({ bench: 'all', runs, moved: rows.filter((r) => r.moved).map((r) => r.key), headlines: rows, results }));
