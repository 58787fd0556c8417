// Seeded orders for the runner: which order a file's tests run in (shuffled, replayable from
// the printed seed) and which one of them runs when each test is run alone. Pure: names and
// numbers in, orders out.

/** mulberry32: a small, good-enough PRNG, so an order depends on nothing but its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A copy of `items` in the order seed `seed` gives (Fisher-Yates). */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  const rnd = prng(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The seed for one file: the run's seed mixed with the file's path (FNV-1a), so files of one
 *  run get different orders and a file gets the same order whatever else ran with it. */
export function fileSeed(seed: number, path: string): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 0x01000193) >>> 0;
  return h >>> 0;
}
