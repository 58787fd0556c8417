// The exact null distribution of the Mann-Whitney U for untied samples of n1 and n2 values, by
// the classic recursion on the largest pooled value (Mann and Whitney 1947; scipy's too): with a
// values of the counted sample and b of the other, the largest is one of the a (it beats all b:
// U grows by b) with probability a/(a + b), else one of the b. In probabilities rather than
// counts, every step adds positive terms, so nothing cancels and nothing overflows: the result
// is the exact distribution up to the last bits of a double (relative error ~1e-15).
//
// A tail up to U = K needs, for the smaller sample's m and the larger's n, m·n·K steps and
// m·K numbers of memory (the rows of the smaller sample, for one value of the larger at a time).

/** Steps a p-value may take (8 values against ~800: a few hundredths of a second); past it, the normal approximation. */
export const EXACT_BUDGET = 20_000_000;
/**
 * Steps an interval's rank may take: it needs the tail up to half of n1·n2, so this reaches about
 * 44 values a side, past which the normal approximation's rank is within one of the exact one.
 */
export const INTERVAL_BUDGET = 2_000_000;

/** The last few distributions: one check asks the same (n1, n2) for its p-value and its interval. */
const cache = new Map<string, Float64Array>();
const CACHE_SIZE = 8;

/** P(U ≤ k) for k = 0…K. */
function cdfTable(n1: number, n2: number, degree: number): Float64Array {
  const key = `${Math.min(n1, n2)}x${Math.max(n1, n2)}`;
  const K = Math.min(degree, n1 * n2);
  const have = cache.get(key);
  if (have && have.length > K) return have;
  const m = Math.min(n1, n2);
  const n = Math.max(n1, n2);
  // rows[a] = the pmf of U for a counted values against the current b others, up to K.
  let rows = Array.from({ length: m + 1 }, () => {
    const r = new Float64Array(K + 1);
    r[0] = 1;
    return r;
  });
  for (let b = 1; b <= n; b++) {
    const next = [rows[0]!];
    for (let a = 1; a <= m; a++) {
      const up = next[a - 1]!; // a − 1 counted values, b others (this b)
      const left = rows[a]!; // a counted values, b − 1 others
      const cur = new Float64Array(K + 1);
      const pa = a / (a + b);
      const pb = b / (a + b);
      for (let k = 0; k <= K; k++) cur[k] = pb * left[k]! + (k >= b ? pa * up[k - b]! : 0);
      next.push(cur);
    }
    rows = next;
  }
  const pmf = rows[m]!;
  const cdf = new Float64Array(K + 1);
  let run = 0;
  for (let k = 0; k <= K; k++) cdf[k] = run = Math.min(1, run + pmf[k]!);
  cache.delete(key);
  cache.set(key, cdf);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return cdf;
}

/** Whether a tail up to U = degree fits `budget` steps. */
export const exactAffordable = (n1: number, n2: number, degree: number, budget = EXACT_BUDGET): boolean => n1 * n2 * Math.min(degree, n1 * n2) <= budget;

/** P(U ≤ k) for every k up to `degree`, computed once (an interval's rank scans them). */
export const exactCdfUpTo = (n1: number, n2: number, degree: number): Float64Array => cdfTable(n1, n2, degree);

/** P(U ≤ k) under the null, exactly (k below 0: 0). */
export function exactCdf(k: number, n1: number, n2: number): number {
  const kk = Math.floor(k);
  if (kk < 0) return 0;
  if (kk >= n1 * n2) return 1;
  return cdfTable(n1, n2, kk)[kk]!;
}

/** P(U ≥ u) under the null, exactly: P(U ≤ n1·n2 − u) by the distribution's symmetry. */
export function exactSf(u: number, n1: number, n2: number): number {
  const N = n1 * n2;
  const k = N - Math.ceil(u);
  // The shorter tail: the recursion's cost grows with the largest U it keeps.
  return k <= N / 2 ? exactCdf(k, n1, n2) : 1 - exactCdf(Math.ceil(u) - 1, n1, n2);
}
