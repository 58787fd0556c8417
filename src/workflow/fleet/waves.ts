// computeWaves: splits a fleet into rollout waves by cumulative percentage (seed 000). Pure and
// table-tested. Wave i ends at ceil(n × p_i / 100), so the first wave always holds at least one
// sentinel (a canary) and the last ends at n; empty waves (small fleets) are dropped.

export const DEFAULT_WAVE_PERCENTAGES = [1, 5, 25, 50, 100] as const;

/** Problems with a percentage list; empty when valid. The reference accepted lists that never
 *  reached 100 and silently left the rest of the fleet behind; we refuse them. */
export function wavePercentageProblems(p: readonly number[]): string[] {
  const problems: string[] = [];
  if (p.length === 0) problems.push('at least one wave percentage is required');
  p.forEach((v, i) => {
    if (!Number.isFinite(v) || v <= 0 || v > 100) problems.push(`wave ${i + 1}: ${v} is not within (0, 100]`);
    if (i > 0 && !(v > p[i - 1]!)) problems.push(`wave ${i + 1}: ${v} must be greater than the previous ${p[i - 1]}`);
  });
  if (p.length > 0 && p[p.length - 1] !== 100) problems.push(`the last wave must be 100 (got ${p[p.length - 1]}); otherwise part of the fleet is never updated`);
  return problems;
}

export function computeWaves<T>(items: readonly T[], percentages: readonly number[] = DEFAULT_WAVE_PERCENTAGES): T[][] {
  const problems = wavePercentageProblems(percentages);
  if (problems.length) throw new RangeError(`invalid wave percentages: ${problems.join('; ')}`);
  const unique = [...new Set(items)];
  const n = unique.length;
  const waves: T[][] = [];
  let start = 0;
  for (const p of percentages) {
    const end = Math.min(n, Math.ceil((n * p) / 100));
    if (end > start) waves.push(unique.slice(start, end));
    start = Math.max(start, end);
  }
  return waves;
}
