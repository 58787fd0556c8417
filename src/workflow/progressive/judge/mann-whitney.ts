// The two-sample Mann-Whitney U test ("is x stochastically greater than y?"), as scipy's
// `mannwhitneyu` computes it: U of the first sample from midranks, the normal approximation with
// the tie correction and a continuity correction, or the exact distribution of U when both
// samples are small and untied (where the normal approximation is poor and exact counting cheap).
import { normalSf } from './special';

export type Alternative = 'greater' | 'less';

export interface MannWhitney {
  /** U of the first sample: pairs (x_i, y_j) with x_i > y_j, ties counting one half. */
  u: number;
  /** One-sided p-value for `alternative`. */
  pValue: number;
  /** Standardized U (continuity-corrected, sign as `alternative` reads it), NaN when exact. */
  z: number;
  method: 'exact' | 'asymptotic';
}

/** Both samples at most this long and no ties: exact p (scipy's 'auto' uses the same cut-off). */
export const EXACT_MAX = 7;

/** Midranks of the pooled values (ties share the mean of their ranks) and the tie groups' sizes. */
export function midranks(values: readonly number[]): { ranks: number[]; ties: number[] } {
  const order = values.map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0]);
  const ranks = new Array<number>(values.length);
  const ties: number[] = [];
  for (let i = 0; i < order.length; ) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]![0] === order[i]![0]) j++;
    const r = (i + j + 2) / 2;
    for (let k = i; k <= j; k++) ranks[order[k]![1]] = r;
    if (j > i) ties.push(j - i + 1);
    i = j + 1;
  }
  return { ranks, ties };
}

/** Counts of each U for samples of n1 and n2 untied values (the classic recursion, by rows). */
function exactCounts(n1: number, n2: number): number[] {
  // f[a][b][u] = f[a-1][b][u-b] + f[a][b-1][u]; kept one `a` row at a time.
  let prev: number[][] = Array.from({ length: n2 + 1 }, () => [1]);
  for (let a = 1; a <= n1; a++) {
    const row: number[][] = [[1]];
    for (let b = 1; b <= n2; b++) {
      const size = a * b + 1;
      const cur = new Array<number>(size).fill(0);
      const up = prev[b]!;
      const left = row[b - 1]!;
      for (let u = 0; u < size; u++) cur[u] = (u - b >= 0 ? (up[u - b] ?? 0) : 0) + (left[u] ?? 0);
      row.push(cur);
    }
    prev = row;
  }
  return prev[n2]!;
}

/** P(U ≥ u) under the null for untied samples of n1 and n2, exactly. */
export function exactSf(u: number, n1: number, n2: number): number {
  const counts = exactCounts(n1, n2);
  const total = counts.reduce((s, c) => s + c, 0);
  let tail = 0;
  for (let k = Math.ceil(u); k < counts.length; k++) tail += counts[k]!;
  return tail / total;
}

/**
 * One-sided test of x against y. `greater`: x tends to be larger than y. Empty samples give p = 1
 * (no evidence), never NaN, so the caller's rules stay simple.
 */
export function mannWhitney(x: readonly number[], y: readonly number[], alternative: Alternative, forceAsymptotic = false): MannWhitney {
  const n1 = x.length;
  const n2 = y.length;
  if (n1 === 0 || n2 === 0) return { u: 0, pValue: 1, z: 0, method: 'asymptotic' };
  const { ranks, ties } = midranks([...x, ...y]);
  let r1 = 0;
  for (let i = 0; i < n1; i++) r1 += ranks[i]!;
  const u1 = r1 - (n1 * (n1 + 1)) / 2;
  const u = alternative === 'greater' ? u1 : n1 * n2 - u1;
  if (!forceAsymptotic && ties.length === 0 && n1 <= EXACT_MAX && n2 <= EXACT_MAX) {
    return { u: u1, pValue: exactSf(u, n1, n2), z: Number.NaN, method: 'exact' };
  }
  const n = n1 + n2;
  const tieTerm = ties.reduce((s, t) => s + t * t * t - t, 0) / (n * (n - 1));
  const sd = Math.sqrt(((n1 * n2) / 12) * (n + 1 - tieTerm));
  // All values equal: U says nothing either way.
  if (sd === 0) return { u: u1, pValue: 1, z: 0, method: 'asymptotic' };
  const z = (u - (n1 * n2) / 2 - 0.5) / sd;
  return { u: u1, pValue: normalSf(z), z, method: 'asymptotic' };
}
