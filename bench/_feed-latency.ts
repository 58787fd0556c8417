// bench:feed's arithmetic over what the agents saw (pure): commit -> apply latencies per
// (change, agent), the worst changes, and the warm-up's own figures.

export const round = (x: number) => Math.round(x * 10) / 10;

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
};

export interface Commit {
  at: number;
  receivers: number;
}

export interface WorstChange {
  change: number;
  atMs: number;
  p50Ms: number;
  maxMs: number;
}

/**
 * Latencies of every delivery of `commits` (in commit order), split at a replica kill, the
 * deliveries that never came, and the three worst changes: a p99 over (change, agent) pairs is
 * set by the worst few changes, so they say whether a miss is one stall or every change's tail.
 */
export function latencies(commits: Map<string, Commit>, seen: Record<string, number[]>, afterKill: ReadonlySet<string>) {
  const lat: number[] = [];
  const latAfterKill: number[] = [];
  let missing = 0;
  const perChange: WorstChange[] = [];
  const firstAt = commits.values().next().value?.at ?? 0;
  let change = 0;
  for (const [id, c] of commits) {
    const got = seen[id] ?? [];
    missing += c.receivers - got.length;
    const mine = got.map((at) => at - c.at);
    (afterKill.has(id) ? latAfterKill : lat).push(...mine);
    if (mine.length) perChange.push({ change, atMs: Math.round(c.at - firstAt), p50Ms: pct(mine, 50), maxMs: pct(mine, 100) });
    change++;
  }
  const worstChanges = perChange.sort((a, b) => b.maxMs - a.maxMs).slice(0, 3);
  return { lat, latAfterKill, missing, worstChanges };
}

/** The warm-up's figures, reported apart from the measured changes'. */
export function warmupFigures(commits: Map<string, Commit>, seen: Record<string, number[]>) {
  if (commits.size === 0) return undefined;
  const { lat, missing } = latencies(commits, seen, new Set());
  return lat.length ? { p50Ms: pct(lat, 50), p99Ms: pct(lat, 99), maxMs: pct(lat, 100), missing } : { missing };
}
