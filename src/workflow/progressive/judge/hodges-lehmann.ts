// The Hodges-Lehmann estimate of the shift between two samples (the median of all pairwise
// differences x_i − y_j) and its distribution-free confidence interval (Moses; Lehmann 1963):
// the K-th smallest and K-th largest of those differences, where K comes from the null
// distribution of U. It is the interval of shifts d for which a two-sided Mann-Whitney test of
// x − d against y does not reject, so the estimate, the interval and the test agree.
//
// The differences are never all listed: the k-th smallest is found by bisection on its value,
// counting the differences at or below a value in one pass over both sorted samples, so a window
// of thousands of samples a side costs milliseconds, not a sort of millions of differences.
//
// K is exact (exact.ts) where the exact distribution is affordable, which covers every sample
// size where the normal approximation's K is off; else from that approximation. A sample too
// small for the asked confidence (1×1, 2×2, 3×3 at 95%) cannot give an interval at that level at
// all: the widest interval it has, from the smallest to the largest difference, is returned
// with its true coverage (90% at 3×3) and marked unreachable.
import { exactAffordable, exactCdfUpTo, INTERVAL_BUDGET } from './exact';
import { normalCdf, normalQuantile } from './special';

export interface Shift {
  estimate: number;
  low: number;
  high: number;
}

/** An interval's rank K and what it covers: exactly where K is exact. */
export interface IntervalRank {
  k: number;
  /** The interval [d_(K), d_(N−K+1)]'s coverage (≥ the confidence asked when reachable). */
  coverage: number;
  /** False when no interval of these samples reaches the confidence asked. */
  reachable: boolean;
  exact: boolean;
}

/** Both samples sorted, kept together: every order statistic of a check reads the same pair. */
export interface Sorted {
  x: Float64Array;
  y: Float64Array;
}

export const sortPair = (x: readonly number[], y: readonly number[]): Sorted => ({ x: Float64Array.from(x).sort(), y: Float64Array.from(y).sort() });

/** Differences x_i − y_j at or below t. One pass: for rising x_i the cut in y only moves right. */
function countAtMost(s: Sorted, t: number): number {
  const { x, y } = s;
  let count = 0;
  let q = 0; // y[0..q) are the y_j with x_i − y_j > t
  for (let i = 0; i < x.length; i++) {
    while (q < y.length && x[i]! - y[q]! > t) q++;
    count += y.length - q;
  }
  return count;
}

/** The smallest difference above t (Infinity when none). */
function nextAbove(s: Sorted, t: number): number {
  const { x, y } = s;
  let best = Infinity;
  let q = 0;
  for (let i = 0; i < x.length; i++) {
    while (q < y.length && x[i]! - y[q]! > t) q++;
    if (q > 0) best = Math.min(best, x[i]! - y[q - 1]!);
  }
  return best;
}

/** The differences in (lo, hi], listed: for each x_i they are a run of the sorted y. */
function between(s: Sorted, lo: number, hi: number): number[] {
  const { x, y } = s;
  const out: number[] = [];
  let p = 0; // y[0..p): x_i − y_j > hi
  let q = 0; // y[0..q): x_i − y_j > lo
  for (let i = 0; i < x.length; i++) {
    while (p < y.length && x[i]! - y[p]! > hi) p++;
    while (q < y.length && x[i]! - y[q]! > lo) q++;
    for (let j = p; j < q; j++) out.push(x[i]! - y[j]!);
  }
  return out;
}

/**
 * The k-th smallest difference (1-based), exactly one of the differences. Bisection on the value
 * until at most a sample's worth of differences lies in the bracket, which are then listed and
 * sorted: about log2(n1·n2 / (n1 + n2)) passes instead of a double's 60.
 */
export function kthDifference(s: Sorted, k: number): number {
  const { x, y } = s;
  let lo = x[0]! - y[y.length - 1]!;
  let below = countAtMost(s, lo);
  if (k <= below) return lo;
  let hi = x[x.length - 1]! - y[0]!;
  let upTo = x.length * y.length;
  const few = Math.max(64, x.length + y.length);
  // Invariant: `below` < k differences at or below lo, `upTo` ≥ k at or below hi.
  for (let i = 0; i < 200 && upTo - below > few; i++) {
    const mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    const c = countAtMost(s, mid);
    if (c >= k) [hi, upTo] = [mid, c];
    else [lo, below] = [mid, c];
  }
  if (upTo - below <= few) return between(s, lo, hi).sort((a, b) => a - b)[k - below - 1]!;
  // A bracket a double cannot split holds one value repeated (or its neighbours): step through them.
  for (;;) {
    const a = nextAbove(s, lo);
    if (countAtMost(s, a) >= k) return a;
    lo = a;
  }
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}

/** The median of the differences: the Hodges-Lehmann estimate. */
export function shiftEstimate(s: Sorted): number {
  const n = s.x.length * s.y.length;
  return n % 2 ? kthDifference(s, (n + 1) / 2) : (kthDifference(s, n / 2) + kthDifference(s, n / 2 + 1)) / 2;
}

/** Σ(t³ − t) over the groups of equal values within each sample: U's tie correction at almost every shift. */
export function withinTies(s: Sorted): number {
  let term = 0;
  for (const xs of [s.x, s.y]) {
    for (let i = 0; i < xs.length; ) {
      let j = i;
      while (j + 1 < xs.length && xs[j + 1] === xs[i]) j++;
      const t = j - i + 1;
      term += t * t * t - t;
      i = j + 1;
    }
  }
  return term;
}

/**
 * K for a two-sided interval at `confidence`: exactly the largest K with P(U ≤ K − 1) ≤ α/2
 * where affordable and neither sample has ties within it (between the samples, ties vanish at
 * almost every shift), else from the normal approximation of U with its tie and continuity
 * corrections (as scipy's `auto` would test each shift).
 */
export function intervalRank(n1: number, n2: number, confidence: number, tieTerm = 0): IntervalRank {
  const half = (1 - confidence) / 2;
  const N = n1 * n2;
  if (tieTerm === 0 && exactAffordable(n1, n2, Math.ceil(N / 2), INTERVAL_BUDGET)) {
    const cdf = exactCdfUpTo(n1, n2, Math.ceil(N / 2));
    let k = 0;
    while (k < N / 2 && cdf[k]! <= half) k++;
    // k now counts the lower tail values with P(U ≤ value) ≤ α/2, so K = k.
    if (k === 0) return { k: 1, coverage: Math.max(0, 1 - 2 * cdf[0]!), reachable: false, exact: true };
    return { k, coverage: 1 - 2 * cdf[k - 1]!, reachable: true, exact: true };
  }
  return rankFromScore(n1, n2, normalQuantile(1 - half), tieTerm);
}

/**
 * K of the interval whose bounds are the shifts where the continuity-corrected standardized U
 * reaches ±z: the Moses formula with any bar, so the sequential test's bar (sequential.ts) gives
 * its own interval (each bound holds at every check, not only at this one).
 */
export function rankFromScore(n1: number, n2: number, z: number, tieTerm = 0): IntervalRank {
  const N = n1 * n2;
  const n = n1 + n2;
  const sd = Math.sqrt((N / 12) * (n + 1 - tieTerm / (n * (n - 1))));
  const k = Math.floor(N / 2 + 0.5 - z * sd);
  const coverage = 1 - 2 * normalCdf((k - 1 + 0.5 - N / 2) / sd);
  return k >= 1 ? { k, coverage, reachable: true, exact: false } : { k: 1, coverage: Math.max(0, 1 - 2 * normalCdf((0.5 - N / 2) / sd)), reachable: false, exact: false };
}

/** The bounds [d_(K), d_(N−K+1)] of a rank. */
export function boundsAt(s: Sorted, k: number): { low: number; high: number } {
  const N = s.x.length * s.y.length;
  return { low: kthDifference(s, k), high: kthDifference(s, N - k + 1) };
}

/** The estimate and the Moses interval at `confidence`, with its rank's coverage and reachability. */
export function hodgesLehmann(x: readonly number[], y: readonly number[], confidence: number): Shift & { rank: IntervalRank | null } {
  if (x.length === 0 || y.length === 0) return { estimate: Number.NaN, low: Number.NaN, high: Number.NaN, rank: null };
  const s = sortPair(x, y);
  const rank = intervalRank(x.length, y.length, confidence, withinTies(s));
  return { estimate: shiftEstimate(s), ...boundsAt(s, rank.k), rank };
}
