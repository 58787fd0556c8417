// One comparison of a canary's series with its stable's over the same window: the verdict and
// its evidence. Pure: the samples (and, for the count rule, errors and requests per window) in,
// a verdict with every number behind it and the reason in words out.
//
// The rule (issue 37): the canary fails when it is shown worse than its stable by an anytime-
// valid test at the level (sequential.ts, counts.ts: a canary no worse than its stable fails at
// most 1 − confidence of the time, however many checks it gets) AND it is over the tolerance:
// its estimate beyond it (relative to the stable's median; for the count rule, an error rate
// above (1 + tolerance) × the stable's) and the same anytime test against the tolerance's
// boundary at evidence 2, so a canary within the tolerance fails at most half the time, however
// many checks (Ville's inequality at ½), where an estimate alone would cross a boundary it sits
// on at some check almost surely. A test at the level with the tolerance's boundary as its null
// (the rule before) cannot reach the power asked for at 10 samples a check: with the level kept
// at every look up to 40, the best constant boundary catches a 1.5× canary (σ 0.5) within 5
// checks in ~72% of runs and a 1.2× one (σ 0.3) within 10 in ~41% (bench/judge/bound.ts;
// docs/progressive-delivery.md), against the 90% and 50% asked.
//
// promoteEarly: "clearly within tolerance" is the anytime test of "worse by the tolerance or
// more" rejected at the level, the same machinery the other way round.
import { allCanaryWeight, clopperPearson, COUNT_BETTER_PRIOR, COUNT_WORSE_PRIOR, countLogLR, ratioEstimate, ratioSequence, type Counts, type Window } from './counts';
import { boundsAt, intervalRank, kthDifference, median, rankFromScore, shiftEstimate, sortPair, withinTies } from './hodges-lehmann';
import { mannWhitney } from './mann-whitney';
import { alwaysValidP, msprtOneSidedLogLR, priorLogLR, rankAutocorrelation, rankInformation, scoreBar } from './sequential';
import { describe, droppedWords, type Dropped } from './words';

export type Direction = 'lower-is-better' | 'higher-is-better';
export type Verdict = 'pass' | 'fail' | 'inconclusive';
export type Method = 'mann-whitney' | 'binomial' | 'none';

export interface CompareOptions {
  direction: Direction;
  /** 0.1: a canary estimated up to 10% worse than the stable's median passes. */
  tolerance: number;
  /** 0.95: 1 − confidence is the anytime tests' level; the interval's coverage is confidence. */
  confidence: number;
  /** Fewer samples on either side: inconclusive (no verdict on a handful of points). */
  minSamples: number;
  promoteEarly?: boolean;
}

export interface CompareInput {
  /** The stable's and the canary's samples; with `totals`, their error counts per window. */
  baseline: readonly number[];
  canary: readonly number[];
  /** Request counts per window, index by index with the error counts (and the stable's with the canary's). */
  totals?: { baseline: readonly number[]; canary: readonly number[] };
  /** Errors and requests over the whole window, when only sums are known: judged as one window. */
  counts?: { baseline: Counts; canary: Counts };
}

/** The shift and its intervals, canary − stable in the query's units (the count rule: error rate). */
export interface ShiftEvidence {
  estimate: number;
  /** The fixed-sample interval at `confidence` (Moses; Clopper-Pearson for counts). */
  low: number;
  high: number;
  /** What [low, high] covers: ≥ confidence when reachable, less (exactly) when the samples are too few. */
  coverage: number;
  reachable: boolean;
  /** The shift at the tolerance's boundary: estimates beyond it are over tolerance. */
  tolerance: number;
  /** The anytime interval: each bound holds at every check at once at level 1 − confidence (±∞: none yet). */
  anytime: { low: number; high: number };
}

export interface Comparison {
  verdict: Verdict;
  /** promoteEarly and the canary shown within tolerance: the step may end now. */
  early: boolean;
  method: Method;
  /** Always-valid p of "the canary is no worse than the stable"; null without a test. */
  pValue: number | null;
  shift: ShiftEvidence | null;
  baseline: { n: number; median: number | null };
  canary: { n: number; median: number | null };
  /** Samples left out, per side and why. */
  dropped: { baseline: Dropped; canary: Dropped };
  reason: string;
}

/**
 * The evidence "worse than the tolerance" needs besides the estimate: 2, Ville's bound at ½ (see
 * the rule above). Higher would protect canaries within the tolerance more and catch those just
 * past it later: at 2 a 1.2× canary (σ 0.3, tolerance 0.1) is caught within 10 checks in 76%.
 */
const TOLERANCE_EVIDENCE = 2;

/** A series that is mostly zeros has no ranks to compare: half or more of its windows zero. */
const ZERO_HEAVY_FRACTION = 0.5;

const droppedOf = (xs: readonly number[]): Dropped => ({ nan: xs.filter((v) => Number.isNaN(v)).length, infinite: xs.filter((v) => v === Infinity || v === -Infinity).length });
const finite = (xs: readonly number[]) => xs.filter((v) => Number.isFinite(v));
type Base = Pick<Comparison, 'baseline' | 'canary' | 'dropped'>;

export function compareSeries(input: CompareInput, o: CompareOptions): Comparison {
  const windows = input.totals ? pairWindows(input) : null;
  const b = finite(input.baseline);
  const c = finite(input.canary);
  const dropped = windows ? windows.dropped : { baseline: droppedOf(input.baseline), canary: droppedOf(input.canary) };
  const nb = windows ? windows.used.length : b.length;
  const nc = windows ? windows.used.length : c.length;
  const base: Base = { baseline: { n: nb, median: b.length ? median(b) : null }, canary: { n: nc, median: c.length ? median(c) : null }, dropped };
  const none = (reason: string): Comparison => ({ verdict: 'inconclusive', early: false, method: 'none', pValue: null, shift: null, ...base, reason });
  if (nb < o.minSamples || nc < o.minSamples) {
    const why = `too few samples: canary ${nc}, stable ${nb} (need ${o.minSamples} each)`;
    const d = droppedWords(dropped);
    return none(d ? `${why}; dropped: ${d}` : why);
  }
  if (windows) return compareCounts(windows.used, o, base);
  if (input.counts) {
    const { canary: cc, baseline: bc } = input.counts;
    return compareCounts([{ canaryErrors: cc.errors, canaryTotal: cc.total, baselineErrors: bc.errors, baselineTotal: bc.total }], o, base);
  }
  const zeros = (xs: number[]) => xs.filter((v) => v === 0).length / xs.length;
  if (zeros(b) >= ZERO_HEAVY_FRACTION || zeros(c) >= ZERO_HEAVY_FRACTION) {
    return none('the series are mostly zeros, which ranks cannot compare; give prometheus.totalQuery so errors are compared as counts');
  }
  return compareRanks(b, c, o, base);
}

/** The windows where all four counts are finite; the rest dropped, per side. */
function pairWindows(input: CompareInput): { used: Window[]; dropped: { baseline: Dropped; canary: Dropped } } {
  const t = input.totals!;
  const len = Math.max(input.baseline.length, input.canary.length, t.baseline.length, t.canary.length);
  const at = (xs: readonly number[], i: number) => (i < xs.length ? xs[i]! : Number.NaN);
  const used: Window[] = [];
  const dropped = { baseline: { nan: 0, infinite: 0 }, canary: { nan: 0, infinite: 0 } };
  const bad = (v: number, d: Dropped) => (Number.isNaN(v) ? (d.nan++, true) : !Number.isFinite(v) ? (d.infinite++, true) : false);
  for (let i = 0; i < len; i++) {
    const w = { baselineErrors: at(input.baseline, i), baselineTotal: at(t.baseline, i), canaryErrors: at(input.canary, i), canaryTotal: at(t.canary, i) };
    // One count per side and window, whichever of its two series is bad.
    const bBad = bad(w.baselineErrors, dropped.baseline) || bad(w.baselineTotal, dropped.baseline);
    const cBad = bad(w.canaryErrors, dropped.canary) || bad(w.canaryTotal, dropped.canary);
    if (!bBad && !cBad) used.push(w);
  }
  return { used, dropped };
}

function compareRanks(b: number[], c: number[], o: CompareOptions, base: Base): Comparison {
  // Oriented so that larger is worse; the margin is relative to the stable's median.
  const s = o.direction === 'lower-is-better' ? 1 : -1;
  const mb = base.baseline.median!;
  const margin = o.tolerance * Math.abs(mb);
  const bo = b.map((v) => s * v);
  const co = c.map((v) => s * v);
  const alpha = 1 - o.confidence;
  const bar = Math.log(1 / alpha);
  // Correlated neighbours carry less information than their count (sequential.ts).
  const rho = Math.max(rankAutocorrelation(b), rankAutocorrelation(c));
  const f = (1 - rho) / (1 + rho);
  const info = rankInformation(c.length, b.length) * f;
  const worse = mannWhitney(co, bo, 'greater');
  const worseLR = priorLogLR(worse.z * Math.sqrt(f), info);
  const shifted = co.map((v) => v - margin);
  const overLR = priorLogLR(mannWhitney(shifted, bo, 'greater').z * Math.sqrt(f), info);
  const better = mannWhitney(shifted, bo, 'less');
  const betterLR = msprtOneSidedLogLR(better.z * Math.sqrt(f), info);
  const sorted = sortPair(co, bo);
  const estimate = shiftEstimate(sorted);
  const ties = withinTies(sorted);
  const rank = intervalRank(c.length, b.length, o.confidence, ties);
  const fixed = boundsAt(sorted, rank.k);
  // The anytime interval: where the shifted U reaches each test's bar at this information.
  const N = c.length * b.length;
  const low = rankFromScore(c.length, b.length, scoreBar(priorLogLR, info, alpha) / Math.sqrt(f), ties);
  const high = rankFromScore(c.length, b.length, scoreBar(msprtOneSidedLogLR, info, alpha) / Math.sqrt(f), ties);
  const anytime = { low: low.reachable ? kthDifference(sorted, low.k) : -Infinity, high: high.reachable ? kthDifference(sorted, N - high.k + 1) : Infinity };
  const shownWorse = worseLR >= bar;
  const estimatedOver = estimate > margin;
  const fail = shownWorse && estimatedOver && overLR >= Math.log(TOLERANCE_EVIDENCE);
  const early = !fail && !!o.promoteEarly && betterLR >= bar;
  const pValue = alwaysValidP(worseLR);
  // Back to canary − stable in the query's units.
  const raw = (lo: number, hi: number) => (s === 1 ? { low: lo, high: hi } : { low: -hi, high: -lo });
  const shift: ShiftEvidence = { estimate: s * estimate, ...raw(fixed.low, fixed.high), coverage: rank.coverage, reachable: rank.reachable, tolerance: s * margin, anytime: raw(anytime.low, anytime.high) };
  const reason = describe({ ...o, pValue, fail, early, shownWorse, estimatedOver, noun: 'value', mb, shift, goodP: alwaysValidP(betterLR), dropped: base.dropped });
  return { verdict: fail ? 'fail' : 'pass', early, method: 'mann-whitney', pValue, shift, ...base, reason };
}

function compareCounts(windows: Window[], o: CompareOptions, base: Base): Comparison {
  const sum = (f: (w: Window) => number) => windows.reduce((t, w) => t + f(w), 0);
  const canary: Counts = { errors: sum((w) => w.canaryErrors), total: sum((w) => w.canaryTotal) };
  const baseline: Counts = { errors: sum((w) => w.baselineErrors), total: sum((w) => w.baselineTotal) };
  const none = (reason: string): Comparison => ({ verdict: 'inconclusive', early: false, method: 'binomial', pValue: null, shift: null, ...base, reason });
  if (!(canary.total > 0 && baseline.total > 0)) return none(`no requests counted (canary ${canary.total}, stable ${baseline.total})`);
  // Higher-is-better makes no sense for errors; the count rule reads "fewer is better".
  const rb = baseline.errors / baseline.total;
  const rc = canary.errors / canary.total;
  const alpha = 1 - o.confidence;
  const bar = Math.log(1 / alpha);
  const allCanary = allCanaryWeight(windows, alpha);
  const worseLR = countLogLR(windows, 1, COUNT_WORSE_PRIOR, allCanary);
  const overLR = countLogLR(windows, 1 + o.tolerance, COUNT_WORSE_PRIOR, allCanary);
  const betterLR = countLogLR(windows, 1 + o.tolerance, COUNT_BETTER_PRIOR);
  const ratio = ratioEstimate(windows);
  const shownWorse = worseLR >= bar;
  const estimatedOver = ratio > 1 + o.tolerance;
  const fail = shownWorse && estimatedOver && overLR >= Math.log(TOLERANCE_EVIDENCE);
  const early = !fail && !!o.promoteEarly && betterLR >= bar;
  const pValue = alwaysValidP(worseLR);
  // Ratios to a difference of error rates (a bound at ∞ stays there).
  const toShift = (r: number) => (r === Infinity ? Infinity : (r - 1) * rb);
  const n = canary.errors + baseline.errors;
  const ci = clopperPearson(canary.errors, n, o.confidence);
  const exposure = baseline.total / canary.total;
  const toRatio = (p: number) => (p >= 1 ? Infinity : (p / (1 - p)) * exposure);
  const seq = ratioSequence(windows, alpha, allCanary);
  const shift: ShiftEvidence = {
    // No stable errors: the ratio is ∞ and the difference is the canary's own rate.
    estimate: n > 0 ? (ratio === Infinity ? rc : toShift(ratio)) : 0,
    low: n > 0 ? toShift(toRatio(ci.low)) : -rb,
    high: n > 0 ? toShift(toRatio(ci.high)) : Infinity,
    coverage: o.confidence,
    reachable: true,
    tolerance: o.tolerance * rb,
    anytime: { low: toShift(seq.low), high: toShift(seq.high) },
  };
  const counted = { baseline: { n: base.baseline.n, median: rb }, canary: { n: base.canary.n, median: rc } };
  const reason = describe({ ...o, pValue, fail, early, shownWorse, estimatedOver, noun: 'error rate', mb: rb, shift, goodP: early ? alwaysValidP(betterLR) : null, counts: { c: canary, b: baseline }, dropped: base.dropped });
  return { verdict: fail ? 'fail' : 'pass', early, method: 'binomial', pValue, shift, ...counted, dropped: base.dropped, reason };
}

export { formatP } from './words';
