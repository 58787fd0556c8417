// The two-sample Mann-Whitney U test ("is x stochastically greater than y?"), as scipy's
// `mannwhitneyu` computes it: U of the first sample from midranks; `auto` takes the exact
// distribution of U when either sample has at most 8 values and there are no ties (scipy's rule;
// exact.ts), else the normal approximation with the tie correction and a continuity correction.
import { exactAffordable, exactSf } from './exact';
import { normalQuantile, normalSf } from './special';

export type Alternative = 'greater' | 'less';
export type MethodChoice = 'auto' | 'exact' | 'asymptotic';

export interface MannWhitney {
  /** U of the first sample: pairs (x_i, y_j) with x_i > y_j, ties counting one half. */
  u: number;
  /** One-sided p-value for `alternative`. */
  pValue: number;
  /**
   * The evidence as a standard normal score, sign as `alternative` reads it: the continuity-
   * corrected standardized U, or for an exact p the score with the same tail (−Φ⁻¹(p)), so the
   * sequential test reads small samples on their exact distribution too.
   */
  z: number;
  method: 'exact' | 'asymptotic';
}

/** scipy's `auto`: exact when the smaller sample has at most this many values (and no ties). */
export const EXACT_MAX = 8;

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

/** The exact path applies: no ties, and the exact tail affordable (exact.ts's budget). */
function useExact(method: MethodChoice, n1: number, n2: number, tied: boolean): boolean {
  if (method === 'asymptotic' || tied) return false;
  if (method === 'auto' && Math.min(n1, n2) > EXACT_MAX) return false;
  return exactAffordable(n1, n2, Math.ceil((n1 * n2) / 2));
}

/** A p-value as a standard normal score, kept finite (p = 1 is −7, not −∞). */
export const scoreOf = (p: number): number => -normalQuantile(Math.min(1 - 1e-12, Math.max(1e-300, p)));

/**
 * One-sided test of x against y. `greater`: x tends to be larger than y. Empty samples give p = 1
 * (no evidence), never NaN, so the caller's rules stay simple. `exact` on tied samples falls back
 * to the normal approximation, as the exact distribution is for untied values.
 */
export function mannWhitney(x: readonly number[], y: readonly number[], alternative: Alternative, method: MethodChoice = 'auto'): MannWhitney {
  const n1 = x.length;
  const n2 = y.length;
  if (n1 === 0 || n2 === 0) return { u: 0, pValue: 1, z: 0, method: 'asymptotic' };
  const { ranks, ties } = midranks([...x, ...y]);
  let r1 = 0;
  for (let i = 0; i < n1; i++) r1 += ranks[i]!;
  const u1 = r1 - (n1 * (n1 + 1)) / 2;
  const u = alternative === 'greater' ? u1 : n1 * n2 - u1;
  if (useExact(method, n1, n2, ties.length > 0)) {
    const p = exactSf(u, n1, n2);
    return { u: u1, pValue: p, z: scoreOf(p), method: 'exact' };
  }
  const n = n1 + n2;
  const tieTerm = ties.reduce((s, t) => s + t * t * t - t, 0) / (n * (n - 1));
  const sd = Math.sqrt(((n1 * n2) / 12) * (n + 1 - tieTerm));
  // All values equal: U says nothing either way.
  if (sd === 0) return { u: u1, pValue: 1, z: 0, method: 'asymptotic' };
  const z = (u - (n1 * n2) / 2 - 0.5) / sd;
  return { u: u1, pValue: normalSf(z), z, method: 'asymptotic' };
}
