// `npm run bench:judge` (issues 27, 37): the compare judge's verdicts measured by simulation.
// Each run is one canary checked up to LOOKS times, every check on all samples since the first
// (ten more a side each), decided as the workflow decides (compareSeries; the first failing check
// rolls back). Per scenario and setting it reports the share of runs failed within 5, 10, 20 and
// 40 checks: for a canary no worse than its stable (A/A) that is the false-alarm rate at every
// look up to 40 (failures only accumulate), for a worse one the power. The scenarios are in
// bench/judge/scenarios.ts; the draws are seeded by scenario name and run, so every setting
// judges the same series. Also: the fewest canary errors that fail with no stable errors, per
// traffic share, against an exact one-look binomial test; what a test of the tolerance's boundary
// could reach on the latency targets (bench/judge/bound.ts); and a wire check (bench/judge/wire.ts).
//
// Flags: --runs N (400 by default, a few minutes a setting on a quiet machine; the issue's targets
// are judged at --runs 2000, which takes hours for all three settings), --looks N (40),
// --settings a,b (names below; all by default), --only TEXT (scenarios whose name contains it),
// --wire N (runs through the stand-in Prometheus). Tables go to stderr as Markdown; one JSON
// object is printed last on stdout.
import { parseArgs } from 'node:util';
import { compareSeries, type CompareInput, type CompareOptions } from '../src/workflow/progressive/judge';
import { boundaryNullCeiling } from './judge/bound';
import { rng, SAMPLES_PER_CHECK, scenarios, type Run, type Scenario } from './judge/scenarios';
import { wire } from './judge/wire';

const { values: flags } = parseArgs({
  options: { runs: { type: 'string', default: '400' }, looks: { type: 'string', default: '40' }, settings: { type: 'string' }, only: { type: 'string' }, wire: { type: 'string', default: '20' } },
});
const RUNS = Number(flags.runs);
const LOOKS = Number(flags.looks);

const BASE: CompareOptions = { direction: 'lower-is-better', tolerance: 0.1, confidence: 0.95, minSamples: 20 };
/** The defaults and two others: a stricter level, and a wider tolerance. */
const SETTINGS: Record<string, CompareOptions> = {
  defaults: BASE,
  'confidence 0.99': { ...BASE, confidence: 0.99 },
  'tolerance 0.2': { ...BASE, tolerance: 0.2 },
};
/** Checks the tables report the cumulative share at. */
const MARKS = [5, 10, 20, 40].filter((m) => m <= LOOKS);

const round = (x: number) => Math.round(x * 10000) / 10000;

/** What the workflow's check k reads: every sample since the first check (for counts, errors and requests per window). */
function inputAt(run: Run, k: number): CompareInput {
  const n = k * SAMPLES_PER_CHECK;
  const input: CompareInput = { baseline: run.baseline.slice(0, n), canary: run.canary.slice(0, n) };
  return run.totals ? { ...input, totals: { baseline: run.totals.baseline.slice(0, n), canary: run.totals.canary.slice(0, n) } } : input;
}

/** The check that failed the run (1-based), or null. */
function firstFailure(run: Run, o: CompareOptions): number | null {
  for (let k = 1; k <= LOOKS; k++) if (compareSeries(inputAt(run, k), o).verdict === 'fail') return k;
  return null;
}

const seedOf = (name: string) => [...name].reduce((h, ch) => (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0, 7) % 100_000;

function measure(sc: Scenario, o: CompareOptions) {
  const failedAt: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i++) {
    const run = sc.make(rng(seedOf(sc.name) * 100_003 + i), LOOKS * SAMPLES_PER_CHECK);
    const k = firstFailure(run, o);
    if (k !== null) failedAt.push(k);
  }
  const within = Object.fromEntries(MARKS.map((m) => [m, round(failedAt.filter((k) => k <= m).length / RUNS)]));
  const sorted = [...failedAt].sort((a, b) => a - b);
  return { truth: sc.truth, runs: RUNS, failedWithin: within, medianCheck: sorted.length ? sorted[Math.floor(sorted.length / 2)]! : null, seconds: round((performance.now() - t0) / 1000) };
}

/**
 * The fewest canary errors (none on the stable) that fail the canary within minSamples samples,
 * per canary share of 1,000 requests a second, against an exact one-look binomial test at the
 * level: the smallest k with share^k ≤ 1 − confidence (all k errors on the canary's side when it
 * takes `share` of them by chance), and the same at the tolerance's boundary share.
 */
function fewestErrors(o: CompareOptions) {
  const alpha = 1 - o.confidence;
  return [0.01, 0.05, 0.1, 0.2, 0.5].map((share) => {
    const n = o.minSamples;
    const exact = (p0: number) => Math.ceil(Math.log(alpha) / Math.log(p0) - 1e-12);
    let judge: number | null = null;
    for (let k = 1; k <= 200 && judge === null; k++) {
      const canary = Array.from({ length: n }, (_, i) => (i === n - 1 ? k : 0));
      const run: Run = { baseline: new Array<number>(n).fill(0), canary, totals: { baseline: new Array<number>(n).fill(1000 * (1 - share)), canary: new Array<number>(n).fill(1000 * share) } };
      if (compareSeries(inputAt(run, n / SAMPLES_PER_CHECK), o).verdict === 'fail') judge = k;
    }
    const atTolerance = ((1 + o.tolerance) * share) / ((1 + o.tolerance) * share + 1 - share);
    return { share, judge, exactNoWorse: exact(share), exactAtTolerance: exact(atTolerance) };
  });
}

/** One Markdown table: the A/A rows (false alarms) or the others (power, and canaries inside the tolerance). */
function table(title: string, results: Record<string, ReturnType<typeof measure>>, aa: boolean): string {
  const head = `| ${title} | ${MARKS.map((m) => `≤ ${m} checks`).join(' | ')} | median check |`;
  const rule = `| --- | ${MARKS.map(() => '---').join(' | ')} | --- |`;
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const rows = Object.entries(results)
    .filter(([, r]) => (r.truth === 'aa') === aa)
    .map(([sc, r]) => `| ${sc} | ${MARKS.map((m) => pct(r.failedWithin[m]!)).join(' | ')} | ${r.medianCheck ?? '—'} |`);
  return [head, rule, ...rows].join('\n');
}

async function main() {
  const t0 = performance.now();
  const chosen = flags.settings ? flags.settings.split(',') : Object.keys(SETTINGS);
  const list = scenarios().filter((s) => !flags.only || s.name.includes(flags.only));
  const settings: Record<string, { options: CompareOptions; scenarios: Record<string, ReturnType<typeof measure>>; fewestErrors: ReturnType<typeof fewestErrors> }> = {};
  for (const name of chosen) {
    const o = SETTINGS[name];
    if (!o) throw new Error(`unknown setting ${name}; known: ${Object.keys(SETTINGS).join(', ')}`);
    const results: Record<string, ReturnType<typeof measure>> = {};
    for (const sc of list) {
      results[sc.name] = measure(sc, o);
      process.stderr.write(`${name} / ${sc.name}: ${JSON.stringify(results[sc.name])}\n`);
    }
    settings[name] = { options: o, scenarios: results, fewestErrors: fewestErrors(o) };
    const tables = `${table(`false alarms, no worse canary (${name})`, results, true)}\n\n${table(`power, worse canary (${name})`, results, false)}`;
    process.stderr.write(`\n${tables}\n\nfewest errors: ${JSON.stringify(settings[name].fewestErrors)}\n\n`);
  }
  const d = settings.defaults?.scenarios;
  const at = (sc: string, m: number) => d?.[sc]?.failedWithin[m];
  const aa = d ? Object.values(d).filter((r) => r.truth === 'aa') : [];
  const fewest = settings.defaults?.fewestErrors.find((f) => f.share === 0.1);
  const targets = d && {
    falseAlarmsAtMost5PercentEveryAACase: aa.length > 0 && aa.every((r) => Object.values(r.failedWithin).every((x) => x <= 0.05)),
    latency1_5xSigma0_5Within5ChecksIn90Percent: (at('latency 1.5× (σ 0.5)', 5) ?? 0) >= 0.9,
    latency1_2xSigma0_3Within10ChecksIn50Percent: (at('latency 1.2× (σ 0.3)', 10) ?? 0) >= 0.5,
    errors1To2PercentWithin10ChecksIn90Percent: (at('errors 1% → 2%, 1000 req/s', 10) ?? 0) >= 0.9,
    fewestErrorsAsExactTestAt10Percent: !!fewest && fewest.judge === fewest.exactNoWorse,
  };
  const summary = {
    bench: 'judge',
    runs: RUNS,
    looks: LOOKS,
    samplesPerCheck: SAMPLES_PER_CHECK,
    settings,
    boundaryNullCeiling: boundaryNullCeiling(),
    wire: Number(flags.wire) > 0 ? await wire(Number(flags.wire), 10, BASE) : null,
    targets,
    seconds: round((performance.now() - t0) / 1000),
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

await main();
