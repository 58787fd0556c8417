// Which test files CI runs alone this time. Running every file in its own process, one after
// another, would take longer than CI's budget; a different slice each run (rotating by a seed,
// the day by default) covers all of them over a few runs, and a seed printed with the run
// makes any failure reproducible. Pure: names and numbers in, names out.

/**
 * The files to run alone: starting at an offset that moves with the seed, in sorted order
 * (wrapping round), as many as `count`. Every file is chosen by some seed in 0..ceil(n/count)-1.
 */
export function rotatingSlice(files: readonly string[], seed: number, count: number): string[] {
  const sorted = [...files].sort();
  const n = sorted.length;
  if (n === 0 || count <= 0) return [];
  const take = Math.min(count, n);
  const start = (((seed * take) % n) + n) % n;
  return Array.from({ length: take }, (_, i) => sorted[(start + i) % n]!);
}

/** The default seed: the day number (UTC), so consecutive days take consecutive slices. */
export const daySeed = (now = Date.now()) => Math.floor(now / 86_400_000);
