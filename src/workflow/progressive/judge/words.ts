// A comparison's verdict in words, for the rollback's `error`, `deploy --wait` and the web view:
// how many times the stable's the canary is, the always-valid p, the fixed-sample interval (or
// why it falls short of its level), the tolerance, and what was dropped. Pure.
import type { Counts } from './counts';

export interface Dropped {
  /** NaN: Prometheus's 0/0, a ratio over a window without requests, or no point where a paired series has one. */
  nan: number;
  /** ±Inf: a ratio over a window with no denominator. */
  infinite: number;
}

export interface Wording {
  direction: 'lower-is-better' | 'higher-is-better';
  tolerance: number;
  confidence: number;
  pValue: number;
  fail: boolean;
  early: boolean;
  /** Shown worse than the stable (the anytime test), whatever the estimate. */
  shownWorse: boolean;
  /** The estimate beyond the tolerance. */
  estimatedOver: boolean;
  noun: string;
  /** The stable's level (median, or error rate) and the shift in the same units. */
  mb: number;
  shift: { estimate: number; low: number; high: number; coverage: number; reachable: boolean };
  goodP: number | null;
  counts?: { c: Counts; b: Counts };
  dropped: { baseline: Dropped; canary: Dropped };
}

export const times = (r: number) => (Number.isFinite(r) ? `${r >= 100 ? Math.round(r) : r.toPrecision(2)}×` : '∞×');
export const formatP = (p: number) => (p < 0.0001 ? '< 0.0001' : p >= 0.995 ? '1' : p >= 0.01 ? `${p.toFixed(2)}` : `${p.toPrecision(1)}`);
const num = (v: number) => (Number.isFinite(v) ? `${Number(v.toPrecision(3))}` : '∞');
/** Counts keep every digit when whole (12345 requests), three significant ones when not (3.72 errors). */
const count = (v: number) => (Number.isInteger(v) ? String(v) : num(v));
const pct = (x: number) => `${Math.round(x * 100)}%`;

/** "3 canary samples NaN, 1 stable sample ±Inf" (empty when nothing was dropped). */
export function droppedWords(d: { baseline: Dropped; canary: Dropped }): string {
  const parts: string[] = [];
  for (const [side, x] of [['canary', d.canary], ['stable', d.baseline]] as const) {
    if (x.nan) parts.push(`${x.nan} ${side} sample${x.nan === 1 ? '' : 's'} NaN`);
    if (x.infinite) parts.push(`${x.infinite} ${side} sample${x.infinite === 1 ? '' : 's'} ±Inf`);
  }
  return parts.join(', ');
}

/**
 * The interval's words: "95% interval 1.2×-1.9×" (as ratios) or "95% interval of the difference
 * 0.1 to 0.3", or what it really covers when the level is out of reach.
 */
function intervalWords(a: Wording, ratio: ((d: number) => string) | null): string {
  const level = pct(a.confidence);
  const bounds = ratio ? `${ratio(a.shift.low)}-${ratio(a.shift.high)}` : `of the difference ${num(a.shift.low)} to ${num(a.shift.high)}`;
  if (a.shift.reachable) return `${level} interval ${bounds}`;
  return `interval ${bounds} covers only ${pct(a.shift.coverage)}: too few samples for ${level}`;
}

export function describe(a: Wording): string {
  const { shift, mb } = a;
  const p = `p = ${formatP(a.pValue)}`.replace('= <', '<');
  const tol = times(a.direction === 'lower-is-better' || a.counts ? 1 + a.tolerance : 1 - a.tolerance);
  const counted = a.counts ? `; ${count(a.counts.c.errors)}/${count(a.counts.c.total)} against ${count(a.counts.b.errors)}/${count(a.counts.b.total)}` : '';
  let head: string;
  if (mb !== 0 && Number.isFinite(mb) && Number.isFinite(shift.estimate)) {
    const r = (d: number) => times((mb + d) / mb);
    head = `canary's ${a.noun} is ${r(shift.estimate)} the stable's (${p}, ${intervalWords(a, r)}${counted})`;
  } else {
    head = `canary's ${a.noun} is ${num(mb + (Number.isFinite(shift.estimate) ? shift.estimate : 0))} against the stable's ${num(mb)} (${p}, ${intervalWords(a, null)}${counted})`;
  }
  const dropped = droppedWords(a.dropped);
  const tail = dropped ? ` (dropped: ${dropped})` : '';
  const side = a.direction === 'higher-is-better' && !a.counts ? 'under' : 'over';
  if (a.fail) return `${head}, ${side} tolerance ${tol}${tail}`;
  if (a.early) return `${head}, clearly within tolerance ${tol} (p = ${formatP(a.goodP ?? 1)} that it is not)${tail}`.replace('= <', '<');
  // A pass is "within tolerance" unless the canary is shown worse and estimated past it.
  if (a.shownWorse && a.estimatedOver) return `${head}, worse than the stable but not yet shown ${side} tolerance ${tol}${tail}`;
  if (a.shownWorse) return `${head}, worse than the stable but within tolerance ${tol}${tail}`;
  if (a.estimatedOver) return `${head}, not shown worse than the stable, so within tolerance ${tol}${tail}`;
  return `${head}, within tolerance ${tol}${tail}`;
}
