// One analysis check, whichever the judge (issue 27): `threshold` asks the instant query of
// analysis.ts against min/max; `compare` reads the canary's and the stable's series per region
// over the same window (range-query.ts) and compares them (judge/). Either way one verdict comes
// back for the hold (canary.ts) with the check's evidence, which recordEvidence keeps
// (analysis_checks, shown by GET /v1/deployments/:id) and announces (`deployment.analysis`).
//
// The judging and the recording are two steps (issue 33): the query runs in the hold's check, a
// journaled step run at least once (a crash before its journal entry runs it again), so it
// writes nothing; the evidence it journaled is then recorded by a database step of its own
// (runTx), whose rows commit with its journal entry: once, and the very evidence the walk
// counted. Recorded inside the check, a replayed check wrote a second row, possibly with the
// other verdict, beside a walk that counted one.
//
// Regions: the canary fails when any region's comparison fails, naming the region; it is
// inconclusive while any region is (the hold fails closed if that lasts to the step's end); an
// early pass (promoteEarly) needs every region shown within tolerance.
//
// The window starts when the walk's first analysed hold began (its first step put the canary in
// front of traffic; the first check comes an interval later, canary.ts) and grows with each
// check: the sequential tests are valid for that, one test over the canary's whole life, not
// one per step.
import { analysisChecks, events, type Sql, type TxSql } from '../../store';
import type { LiveEvent } from '../../live-events';
import { queryPrometheus, type AnalysisResult } from './analysis';
import { compareSeries, type Comparison, type CompareInput } from './judge';
import { fillTemplate, queryRange, rangeStep, type SeriesRead } from './range-query';
import { compareSettings, ms, type Analysis } from './strategy';
import type { OutboundPolicy } from '../outbound/policy';
import type { WorkflowMetrics } from '../metrics';

export interface Judgement extends AnalysisResult {
  /** promoteEarly, and every region shown within tolerance: the step may end now. */
  early?: boolean;
}

type AnalysisEvent = Extract<LiveEvent, { type: 'deployment.analysis' }>;

/** What a check found, to record once (recordEvidence): its rows and events, and when it ran. */
export interface Evidence {
  /** Epoch ms of the check (the end of a comparison's window). */
  at: number;
  rows: { region: string | null; verdict: AnalysisEvent['verdict']; detail: Record<string, unknown> }[];
  events: AnalysisEvent[];
}

export interface JudgeDeps {
  sql: Sql;
  metrics: WorkflowMetrics;
  outbound: OutboundPolicy;
}

/** Who is compared: the canary (the deployment under analysis) and the stable it would replace. */
export interface JudgeSubject {
  deploymentId: string;
  stableId: string | null;
  regions: string[];
  /** Where a comparison's window starts (the walk's first analysed hold); absent: at the first
   *  compare check, as walks from before it did. */
  since?: number;
}

/** Judges one check; writes nothing (its evidence is recorded by the caller's own step). */
export async function judgeAnalysis(deps: JudgeDeps, subject: JudgeSubject, analysis: Analysis): Promise<{ judgement: Judgement; evidence: Evidence }> {
  const judged = analysis.judge === 'compare' ? await judgeCompare(deps, subject, analysis) : await judgeThreshold(deps, subject.deploymentId, analysis);
  deps.metrics.analysed('prometheus', judged.judgement.verdict);
  return judged;
}

async function judgeThreshold(deps: JudgeDeps, id: string, analysis: Analysis): Promise<{ judgement: Judgement; evidence: Evidence }> {
  const result = await queryPrometheus(analysis.prometheus, deps.outbound);
  const { min, max } = analysis.prometheus;
  const bounds = { ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
  const event: AnalysisEvent = { type: 'deployment.analysis', deploymentId: id, region: null, signal: 'prometheus', verdict: result.verdict, value: result.value, reason: result.reason, ...bounds };
  const rows = [{ region: null, verdict: result.verdict, detail: { judge: 'threshold', value: result.value, reason: result.reason, ...bounds } }];
  return { judgement: result, evidence: { at: Date.now(), rows, events: [event] } };
}

/** Both series of one region: values, or counts too when the count rule applies. */
async function readRegion(deps: JudgeDeps, s: JudgeSubject, a: Analysis, region: string, window: { startMs: number; endMs: number; stepMs: number }) {
  const p = a.prometheus;
  const read = (query: string, deployment: string) => queryRange(p.url, fillTemplate(query, { deployment, region, stepMs: window.stepMs }), window, deps.outbound);
  const queries = [read(p.query, s.stableId!), read(p.query, s.deploymentId)];
  if (p.totalQuery) queries.push(read(p.totalQuery, s.stableId!), read(p.totalQuery, s.deploymentId));
  const reads: SeriesRead[] = await Promise.all(queries);
  const bad = reads.find((r): r is Extract<SeriesRead, { ok: false }> => !r.ok);
  if (bad) return { error: bad.reason };
  const [b, c, bt, ct] = reads as Extract<SeriesRead, { ok: true }>[];
  return { input: bt && ct ? pairCounts(b!, bt, c!, ct) : { baseline: b!.values, canary: c!.values } };
}

type Points = { values: number[]; times: number[] };

/**
 * The count rule's windows: errors and requests of both deployments at each timestamp any of the
 * four series has, NaN where one has no point (the judge drops that window and counts it). Pure.
 */
export function pairCounts(be: Points, bt: Points, ce: Points, ct: Points): CompareInput {
  const all = [be, bt, ce, ct];
  const times = [...new Set(all.flatMap((s) => s.times))].sort((x, y) => x - y);
  const at = all.map((s) => new Map(s.times.map((t, i) => [t, s.values[i]!])));
  const column = (k: number) => times.map((t) => at[k]!.get(t) ?? Number.NaN);
  return { baseline: column(0), canary: column(2), totals: { baseline: column(1), canary: column(3) } };
}

async function judgeCompare(deps: JudgeDeps, s: JudgeSubject, a: Analysis): Promise<{ judgement: Judgement; evidence: Evidence }> {
  const settings = compareSettings(a);
  const endMs = Date.now();
  if (!s.stableId) return { judgement: { verdict: 'inconclusive', value: null, reason: 'no stable deployment to compare with' }, evidence: { at: endMs, rows: [], events: [] } };
  const startMs = s.since ?? (await analysisChecks.firstCheckAt(deps.sql, s.deploymentId, 'compare'))?.getTime() ?? endMs;
  const stepMs = rangeStep(ms(a.interval), endMs - startMs);
  const perRegion = await Promise.all(
    s.regions.map(async (region): Promise<{ region: string; c: Comparison; series?: { baseline: number[]; canary: number[] } }> => {
      const r = await readRegion(deps, s, a, region, { startMs, endMs, stepMs });
      if ('error' in r) return { region, c: { verdict: 'inconclusive', early: false, method: 'none', pValue: null, shift: null, baseline: { n: 0, median: null }, canary: { n: 0, median: null }, dropped: NONE_DROPPED, reason: r.error! } };
      return { region, c: compareSeries(r.input!, settings), series: { baseline: thin(r.input!.baseline), canary: thin(r.input!.canary) } };
    }),
  );
  // The rows keep both series, thinned, for the web view's plot; the events stay small.
  const rows = perRegion.map(({ region, c, series }) => ({ region, verdict: c.verdict, detail: { ...evidence(region, s.stableId!, c), ...(series ? { series } : {}) } }));
  const evts = perRegion.map(({ region, c }): AnalysisEvent => ({ type: 'deployment.analysis', deploymentId: s.deploymentId, signal: 'prometheus', value: null, ...evidence(region, s.stableId!, c) }));
  const found: Evidence = { at: endMs, rows, events: evts };
  const named = (v: string) => perRegion.filter((r) => r.c.verdict === v).map((r) => `in ${r.region}: ${r.c.reason}`).join('; ');
  if (perRegion.some((r) => r.c.verdict === 'fail')) return { judgement: { verdict: 'fail', value: null, reason: named('fail') }, evidence: found };
  if (perRegion.some((r) => r.c.verdict === 'inconclusive')) return { judgement: { verdict: 'inconclusive', value: null, reason: named('inconclusive') }, evidence: found };
  const early = perRegion.length > 0 && perRegion.every((r) => r.c.early);
  return { judgement: { verdict: 'pass', value: null, reason: named('pass'), ...(early ? { early } : {}) }, evidence: found };
}

const NONE_DROPPED = { baseline: { nan: 0, infinite: 0 }, canary: { nan: 0, infinite: 0 } };

/** Points of a series kept with a check: a chart's worth, not the window's every sample. */
const SERIES_POINTS = 60;

/** Bucket means down to SERIES_POINTS (a long window would make every check row large). Pure. */
export function thin(values: readonly number[]): number[] {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length <= SERIES_POINTS) return finite;
  const size = finite.length / SERIES_POINTS;
  return Array.from({ length: SERIES_POINTS }, (_, i) => {
    const bucket = finite.slice(Math.floor(i * size), Math.floor((i + 1) * size));
    return bucket.reduce((t, v) => t + v, 0) / bucket.length;
  });
}

/**
 * A compare check as the API and the event show it (issue 27's field names; issue 37 adds
 * `dropped` and, in `shift`, `coverage`, `reachable`, `tolerance` and `anytime`). JSON has no
 * Infinity: an unbounded end of an interval is stored and shown as null.
 */
function evidence(region: string, stableId: string, c: Comparison) {
  return {
    judge: 'compare' as const,
    region,
    verdict: c.verdict,
    method: c.method,
    pValue: c.pValue,
    shift: c.shift,
    baseline: { deploymentId: stableId, n: c.baseline.n, median: c.baseline.median },
    canary: { n: c.canary.n, median: c.canary.median },
    dropped: c.dropped,
    reason: c.reason,
    ...(c.early ? { early: true } : {}),
  };
}

/** Keeps and announces a check's evidence, in the caller's transaction (the evidence step). */
export async function recordEvidence(tx: TxSql, deploymentId: string, e: Evidence): Promise<null> {
  await analysisChecks.insertChecks(tx, e.rows.map((r) => ({ deploymentId, judge: r.detail.judge as 'threshold' | 'compare', region: r.region, verdict: r.verdict, detail: r.detail })), new Date(e.at));
  await events.publishEvents(tx, e.events);
  return null;
}
