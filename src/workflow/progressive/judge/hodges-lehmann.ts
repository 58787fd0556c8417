// The Hodges-Lehmann estimate of the shift between two samples (the median of all pairwise
// differences x_i − y_j) and its distribution-free confidence interval (Moses; Lehmann 1963):
// the K-th smallest and K-th largest of those differences, where K comes from the null
// distribution of U. It is the interval of shifts d for which a two-sided Mann-Whitney test of
// x − d against y does not reject, so the estimate, the interval and the test agree.
import { exactSf, EXACT_MAX } from './mann-whitney';
import { normalQuantile } from './special';

export interface Shift {
  estimate: number;
  low: number;
  high: number;
}

/** Sorted pairwise differences x_i − y_j (n1·n2 of them; the judge caps the samples it keeps). */
export function pairwiseDifferences(x: readonly number[], y: readonly number[]): Float64Array {
  const d = new Float64Array(x.length * y.length);
  let k = 0;
  for (const a of x) for (const b of y) d[k++] = a - b;
  return d.sort();
}

const medianOfSorted = (s: ArrayLike<number>): number => {
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
};

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  return medianOfSorted([...values].sort((a, b) => a - b));
}

/**
 * K for a two-sided interval at `confidence`: exactly (the largest K with P(U ≤ K − 1) ≤ α/2)
 * for small samples, else from the normal approximation of U with its continuity correction.
 * At least 1: tiny samples cannot reach the level, and then the interval is every difference.
 */
export function intervalRank(n1: number, n2: number, confidence: number): number {
  const alpha = 1 - confidence;
  const N = n1 * n2;
  if (n1 <= EXACT_MAX && n2 <= EXACT_MAX) {
    let k = 1;
    // P(U ≤ k − 1) = P(U ≥ N − k + 1) by symmetry.
    while (k < N / 2 && exactSf(N - k + 1, n1, n2) <= alpha / 2) k++;
    return Math.max(1, k - 1);
  }
  const sd = Math.sqrt((N * (n1 + n2 + 1)) / 12);
  return Math.max(1, Math.floor(N / 2 + 0.5 - normalQuantile(1 - alpha / 2) * sd));
}

export function hodgesLehmann(x: readonly number[], y: readonly number[], confidence: number): Shift {
  if (x.length === 0 || y.length === 0) return { estimate: Number.NaN, low: Number.NaN, high: Number.NaN };
  const d = pairwiseDifferences(x, y);
  const k = intervalRank(x.length, y.length, confidence);
  return { estimate: medianOfSorted(d), low: d[k - 1]!, high: d[d.length - k]! };
}
