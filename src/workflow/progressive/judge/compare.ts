// One comparison of a canary's series with its stable's over the same window: the verdict and
// its evidence. Pure: the samples (and, for the count rule, error and request counts) in, a
// verdict with every number behind it and the reason in words out.
//
// The tolerance is a margin relative to the stable's median: the canary fails only when it is
// shown worse than the stable by more than tolerance × median (for the count rule: its error
// rate above (1 + tolerance) × the stable's). The margin is part of the hypothesis, not a
// second filter, so a significant but negligible difference passes, and the p-value is the one
// for "worse beyond tolerance". Both ways are always-valid (sequential.ts, counts.ts).
import { betaBinomialLogLR, nullShare, rateRatio, type Counts } from './counts';
import { hodgesLehmann, median, type Shift } from './hodges-lehmann';
import { mannWhitney } from './mann-whitney';
import { alwaysValidP, msprtFocusedLogLR, msprtOneSidedLogLR, rankAutocorrelation, rankInformation } from './sequential';

export type Direction = 'lower-is-better' | 'higher-is-better';
export type Verdict = 'pass' | 'fail' | 'inconclusive';
export type Method = 'mann-whitney' | 'binomial' | 'none';

export interface CompareOptions {
  direction: Direction;
  /** 0.1: a canary up to 10% worse than the stable's median is still a pass. */
  tolerance: number;
  /** 0.95: the sequential test's level is 1 − confidence; the interval's coverage is confidence. */
  confidence: number;
  /** Fewer samples on either side: inconclusive (no verdict on a handful of points). */
  minSamples: number;
  promoteEarly?: boolean;
}

export interface CompareInput {
  baseline: readonly number[];
  canary: readonly number[];
  /** Error and request counts over the window: the count rule judges them instead of the ranks. */
  counts?: { baseline: Counts; canary: Counts };
}

export interface Comparison {
  verdict: Verdict;
  /** promoteEarly and the canary shown within tolerance: the step may end now. */
  early: boolean;
  method: Method;
  /** Always-valid p of "the canary is worse beyond tolerance"; null without a test. */
  pValue: number | null;
  /** canary − stable in the query's units (the count rule: in error rate). */
  shift: Shift | null;
  baseline: { n: number; median: number | null };
  canary: { n: number; median: number | null };
  reason: string;
}

/** A series that is mostly zeros has no ranks to compare: half or more of its windows zero. */
const ZERO_HEAVY_FRACTION = 0.5;
/**
 * The Hodges-Lehmann interval sorts n1·n2 differences; past this many samples per side only the
 * latest are used for it (the test itself uses every sample). 1000² differences sort in ~0.1 s.
 */
const MAX_INTERVAL_SAMPLES = 1000;

const finite = (xs: readonly number[]) => xs.filter((v) => Number.isFinite(v));

export function compareSeries(input: CompareInput, o: CompareOptions): Comparison {
  const b = finite(input.baseline);
  const c = finite(input.canary);
  const base = { baseline: { n: b.length, median: b.length ? median(b) : null }, canary: { n: c.length, median: c.length ? median(c) : null } };
  const none = (reason: string): Comparison => ({ verdict: 'inconclusive', early: false, method: 'none', pValue: null, shift: null, ...base, reason });
  if (b.length < o.minSamples || c.length < o.minSamples) {
    return none(`too few samples: canary ${c.length}, stable ${b.length} (need ${o.minSamples} each)`);
  }
  if (input.counts) return compareCounts(input.counts, o, base);
  const zeros = (xs: number[]) => xs.filter((v) => v === 0).length / xs.length;
  if (zeros(b) >= ZERO_HEAVY_FRACTION || zeros(c) >= ZERO_HEAVY_FRACTION) {
    return none('the series are mostly zeros, which ranks cannot compare; give prometheus.totalQuery so errors are compared as counts');
  }
  return compareRanks(b, c, o, base);
}

function compareRanks(b: number[], c: number[], o: CompareOptions, base: Pick<Comparison, 'baseline' | 'canary'>): Comparison {
  // Oriented so that larger is worse; the margin is relative to the stable's median.
  const s = o.direction === 'lower-is-better' ? 1 : -1;
  const mb = base.baseline.median!;
  const margin = o.tolerance * Math.abs(mb);
  const bo = b.map((v) => s * v);
  const shifted = c.map((v) => s * v - margin);
  // Correlated neighbours carry less information than their count (sequential.ts).
  const rho = Math.max(rankAutocorrelation(b), rankAutocorrelation(c));
  const f = (1 - rho) / (1 + rho);
  const info = rankInformation(c.length, b.length) * f;
  const bound = Math.log(1 / (1 - o.confidence));
  const worse = mannWhitney(shifted, bo, 'greater', true);
  // "Worse" weighs the effects worth catching quickly (sequential.ts); "better" is about small
  // differences (within tolerance), which the wide mixture suits.
  const worseLR = worse.z > 0 ? msprtFocusedLogLR(worse.z * Math.sqrt(f), info) : 0;
  const better = mannWhitney(shifted, bo, 'less', true);
  const betterLR = better.z > 0 ? msprtOneSidedLogLR(better.z * Math.sqrt(f), info) : 0;
  const shift = hodgesLehmann(c.slice(-MAX_INTERVAL_SAMPLES), b.slice(-MAX_INTERVAL_SAMPLES), o.confidence);
  const pValue = alwaysValidP(worseLR);
  const fail = worseLR >= bound;
  const early = !fail && !!o.promoteEarly && betterLR >= bound;
  const words = describe({ o, pValue, early, fail, noun: "value", mb, shift, goodP: alwaysValidP(betterLR) });
  return { verdict: fail ? 'fail' : 'pass', early, method: 'mann-whitney', pValue, shift, ...base, reason: words };
}

function compareCounts(counts: { baseline: Counts; canary: Counts }, o: CompareOptions, base: Pick<Comparison, 'baseline' | 'canary'>): Comparison {
  const { canary, baseline } = counts;
  const none = (reason: string): Comparison => ({ verdict: 'inconclusive', early: false, method: 'binomial', pValue: null, shift: null, ...base, reason });
  if (!(canary.total > 0 && baseline.total > 0)) return none(`no requests counted (canary ${canary.total}, stable ${baseline.total})`);
  // Higher-is-better makes no sense for errors; the count rule reads "fewer is better".
  const rb = baseline.errors / baseline.total;
  const rc = canary.errors / canary.total;
  const ratio = 1 + o.tolerance;
  const n = canary.errors + baseline.errors;
  const p0 = nullShare(canary, baseline, ratio);
  const bound = Math.log(1 / (1 - o.confidence));
  const lr = n > 0 ? betaBinomialLogLR(canary.errors, n, p0) : 0;
  const fail = canary.errors / Math.max(1, n) > p0 && lr >= bound;
  // "Clearly good": the same mixture against the margin, with the canary's share below it.
  const early = !fail && !!o.promoteEarly && n > 0 && canary.errors / n < p0 && lr >= bound;
  const pValue = canary.errors / Math.max(1, n) > p0 ? alwaysValidP(lr) : 1;
  const rr = rateRatio(canary, baseline, o.confidence);
  const shift: Shift = { estimate: rc - rb, low: rr.low * rb - rb, high: Number.isFinite(rr.high) ? rr.high * rb - rb : Infinity };
  const counted = { baseline: { n: base.baseline.n, median: rb }, canary: { n: base.canary.n, median: rc } };
  const words = describe({ o, pValue, early, fail, noun: 'error rate', mb: rb, shift, goodP: early ? alwaysValidP(lr) : null, counts: { c: canary, b: baseline } });
  return { verdict: fail ? 'fail' : 'pass', early, method: 'binomial', pValue, shift, ...counted, reason: words };
}

const times = (r: number) => (Number.isFinite(r) ? `${r >= 100 ? Math.round(r) : r.toPrecision(2)}×` : '∞×');
export const formatP = (p: number) => (p < 0.0001 ? '< 0.0001' : p >= 0.995 ? '1' : p >= 0.01 ? `${p.toFixed(2)}` : `${p.toPrecision(1)}`);
const num = (v: number) => (Number.isFinite(v) ? `${Number(v.toPrecision(3))}` : '∞');

/** The verdict in words: how many times the stable's the canary is, with p, interval and tolerance. */
function describe(a: { o: CompareOptions; pValue: number; early: boolean; fail: boolean; noun: string; mb: number; shift: Shift; goodP: number | null; counts?: { c: Counts; b: Counts } }): string {
  const { o, shift, mb } = a;
  const level = `${Math.round(o.confidence * 100)}%`;
  const p = `p = ${formatP(a.pValue)}`.replace('= <', '<');
  const tol = times(o.direction === 'lower-is-better' || a.counts ? 1 + o.tolerance : 1 - o.tolerance);
  const side = a.fail ? (o.direction === 'higher-is-better' && !a.counts ? 'under' : 'over') : 'within';
  const counted = a.counts ? `; ${a.counts.c.errors}/${a.counts.c.total} against ${a.counts.b.errors}/${a.counts.b.total}` : '';
  let head: string;
  if (mb !== 0 && Number.isFinite(shift.estimate)) {
    const r = (d: number) => (mb + d) / mb;
    head = `canary's ${a.noun} is ${times(r(shift.estimate))} the stable's (${p}, ${level} interval ${times(r(shift.low))}-${times(r(shift.high))}${counted})`;
  } else {
    head = `canary's ${a.noun} is ${num(mb + (Number.isFinite(shift.estimate) ? shift.estimate : 0))} against the stable's ${num(mb)} (${p}, ${level} interval of the difference ${num(shift.low)} to ${num(shift.high)}${counted})`;
  }
  if (a.early) return `${head}, clearly within tolerance ${tol} (p = ${formatP(a.goodP ?? 1)} that it is not)`.replace('= <', '<');
  return `${head}, ${side} tolerance ${tol}`;
}
