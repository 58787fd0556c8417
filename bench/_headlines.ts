// The headline figures `npm run bench` tabulates, where each is read from its benchmark's JSON,
// and the comparison with the last recorded runs (bench/baseline.json). Pure: run.ts does the
// running and the files.

export interface Headline {
  key: string;
  label: string;
  /** The benchmark (bench/<bench>.ts) whose JSON holds it. */
  bench: string;
  unit: string;
  /** Which way is better: a move the other way is a regression. */
  better: 'lower' | 'higher';
  pick(json: unknown): number | undefined;
}

export interface Recorded {
  values: number[];
  median: number;
  /** Spread of the recorded runs (max - min); null when recorded from a single figure. */
  noise: number | null;
}

export interface Baseline {
  recorded: string;
  runs: number;
  note?: string;
  figures: Record<string, Recorded>;
}

export interface Row {
  key: string;
  label: string;
  unit: string;
  now: number | null;
  last: number | null;
  noise: number | null;
  /** now - last, or null when either is missing. */
  change: number | null;
  moved: boolean;
  /** Moved the wrong way. */
  worse: boolean;
}

const get = (json: unknown, path: string): number | undefined => {
  let v: unknown = json;
  for (const p of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[p] : undefined;
  return typeof v === 'number' ? v : undefined;
};
const at =
  (path: string, scale = 1) =>
  (json: unknown) => {
    const v = get(json, path);
    return v === undefined ? undefined : v * scale;
  };

export const HEADLINES: Headline[] = [
  { key: 'engine.tenStepP50', label: 'engine 10-step p50 (fsync off)', bench: 'engine', unit: 'ms', better: 'lower', pick: at('tenStep.p50Ms') },
  { key: 'engine.perStep', label: 'engine per step (fsync off)', bench: 'engine', unit: 'ms', better: 'lower', pick: at('perStepMs') },
  { key: 'engine.distinctKeys', label: 'engine 50 callers, distinct keys (fsync off)', bench: 'engine', unit: '/s', better: 'higher', pick: at('throughputTenStepPerSec.distinctKeys') },
  { key: 'engine.oneKey', label: 'engine 50 callers, one key (fsync off)', bench: 'engine', unit: '/s', better: 'higher', pick: at('throughputTenStepPerSec.oneKey') },
  { key: 'engine.awakeableHttpP50', label: 'engine awakeable resolve -> resumed, HTTP p50', bench: 'engine', unit: 'ms', better: 'lower', pick: at('awakeableResume.fromHttp.p50Ms') },
  { key: 'engine.durable.tenStepP50', label: 'engine 10-step p50 (fsync on)', bench: 'engine', unit: 'ms', better: 'lower', pick: at('durablePostgres.tenStep.p50Ms') },
  { key: 'engine.durable.perStepOverCommit', label: 'engine per step / one commit (fsync on)', bench: 'engine', unit: 'x', better: 'lower', pick: (j) => {
    const s = get(j, 'durablePostgres.perStepMs');
    const c = get(j, 'durablePostgres.oneRowCommitP50Ms');
    return s !== undefined && c ? Number((s / c).toFixed(2)) : undefined;
  } },
  { key: 'engine.durable.distinctKeys', label: 'engine 50 callers, distinct keys (fsync on)', bench: 'engine', unit: '/s', better: 'higher', pick: at('durablePostgres.throughputTenStepPerSec.distinctKeys') },
  { key: 'feed.p99At100', label: 'feed commit -> agent p99, 100 agents', bench: 'feed', unit: 'ms', better: 'lower', pick: at('propagation.agents100.p99Ms') },
  { key: 'feed.p50At1000', label: 'feed commit -> agent p50, 1,000 agents', bench: 'feed', unit: 'ms', better: 'lower', pick: at('propagation.agents1000.p50Ms') },
  { key: 'feed.p99At1000', label: 'feed commit -> agent p99, 1,000 agents', bench: 'feed', unit: 'ms', better: 'lower', pick: at('propagation.agents1000.p99Ms') },
  { key: 'deploy.p50', label: 'deploy create -> ready p50 (2 regions)', bench: 'deploy', unit: 'ms', better: 'lower', pick: at('createToReadyMs.p50') },
  { key: 'rollout.total', label: 'rollout of 1,000 sentinels', bench: 'rollout', unit: 's', better: 'lower', pick: at('totalMs', 1 / 1000) },
  { key: 'canary.rollbackP99', label: 'canary rollback, bad signal -> 100% stable p99', bench: 'canary', unit: 'ms', better: 'lower', pick: at('rollbackMs.p99') },
];

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Each headline now (median of this run's values) against the record. A move counts when it
 *  is larger than the recorded spread; with no recorded spread nothing is called moved. */
export function compareFigures(values: Record<string, number[]>, baseline: Baseline | null): Row[] {
  return HEADLINES.map((h) => {
    const xs = values[h.key];
    const now = xs?.length ? round(median(xs)) : null;
    const rec = baseline?.figures[h.key];
    const last = rec ? round(rec.median) : null;
    const noise = rec?.noise ?? null;
    const change = now !== null && last !== null ? round(now - last) : null;
    const moved = change !== null && noise !== null && Math.abs(change) > noise;
    const worse = moved && (h.better === 'lower' ? change! > 0 : change! < 0);
    return { key: h.key, label: h.label, unit: h.unit, now, last, noise: noise === null ? null : round(noise), change, moved, worse };
  });
}

const round = (x: number) => Math.round(x * 100) / 100;

export function formatTable(rows: readonly Row[], baseline: Baseline | null): string {
  const head = ['figure', 'now', `last (${baseline ? `${baseline.recorded}, ${baseline.runs} run${baseline.runs === 1 ? '' : 's'}` : 'none recorded'})`, 'spread', 'change', 'verdict'];
  const fmt = (v: number | null, unit: string) => (v === null ? '-' : `${v} ${unit}`);
  const body = rows.map((r) => [
    r.label,
    fmt(r.now, r.unit),
    fmt(r.last, r.unit),
    r.noise === null ? '-' : `±${r.noise}`,
    r.change === null ? '-' : `${r.change > 0 ? '+' : ''}${r.change}`,
    r.now === null ? 'not run' : r.last === null ? 'no record' : r.noise === null ? 'noise unknown' : r.moved ? (r.worse ? 'MOVED (worse)' : 'moved (better)') : 'within noise',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}
