// The compare judge's evidence for the deployment page (issue 27): the newest verdict per region
// with both series (the stable's and the canary's, as the check read them) as SVG geometry.
// Pure, and lenient like the other models: a check without a field loses that field's line,
// never the page.

export interface JudgeCheck {
  region: string;
  verdict: 'pass' | 'fail' | 'inconclusive';
  reason: string;
  method: string;
  pValue: number | null;
  stableId: string | null;
  baselineMedian: number | null;
  canaryMedian: number | null;
  series: { baseline: number[]; canary: number[] } | null;
}

const nums = (v: unknown): number[] | null => (Array.isArray(v) && v.every((x) => typeof x === 'number') ? (v as number[]) : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The newest compare check of each region, regions in name order. */
export function latestJudgements(checks: unknown): JudgeCheck[] {
  if (!Array.isArray(checks)) return [];
  const byRegion = new Map<string, JudgeCheck>();
  for (const raw of checks as Record<string, unknown>[]) {
    if (raw?.judge !== 'compare' || typeof raw.region !== 'string') continue;
    const v = raw.verdict;
    const base = (raw.baseline ?? {}) as Record<string, unknown>;
    const can = (raw.canary ?? {}) as Record<string, unknown>;
    const s = (raw.series ?? null) as Record<string, unknown> | null;
    const series = s && nums(s.baseline) && nums(s.canary) ? { baseline: s.baseline as number[], canary: s.canary as number[] } : null;
    // A newer check without series (only the newest carries them) keeps the older plot.
    const before = byRegion.get(raw.region);
    byRegion.set(raw.region, {
      region: raw.region,
      verdict: v === 'pass' || v === 'fail' ? v : 'inconclusive',
      reason: typeof raw.reason === 'string' ? raw.reason : '',
      method: typeof raw.method === 'string' ? raw.method : '',
      pValue: num(raw.pValue),
      stableId: typeof base.deploymentId === 'string' ? base.deploymentId : null,
      baselineMedian: num(base.median),
      canaryMedian: num(can.median),
      series: series ?? before?.series ?? null,
    });
  }
  return [...byRegion.values()].sort((a, b) => a.region.localeCompare(b.region));
}

export interface SeriesGeometry {
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  baselinePath: string;
  canaryPath: string;
  yTicks: { y: number; label: string }[];
}

const r1 = (n: number) => Math.round(n * 10) / 10;

/** Both series on one value axis, each spread over the plot's width (they share the window). */
export function seriesGeometry(series: { baseline: number[]; canary: number[] }, width = 640, height = 160): SeriesGeometry {
  const plot = { left: 48, top: 10, right: width - 10, bottom: height - 16 };
  const all = [...series.baseline, ...series.canary];
  const lo0 = all.length ? Math.min(0, ...all) : 0;
  const hi0 = all.length ? Math.max(...all) : 1;
  const hi = hi0 > lo0 ? hi0 * 1.05 : lo0 + 1;
  const y = (v: number) => r1(plot.bottom - ((v - lo0) / (hi - lo0)) * (plot.bottom - plot.top));
  const path = (xs: number[]) =>
    xs.map((v, i) => `${i === 0 ? 'M' : 'L'}${r1(plot.left + (xs.length > 1 ? i / (xs.length - 1) : 0) * (plot.right - plot.left))} ${y(v)}`).join('');
  const label = (v: number) => String(Number(v.toPrecision(3)));
  return { width, height, plot, baselinePath: path(series.baseline), canaryPath: path(series.canary), yTicks: [lo0, hi0].map((v) => ({ y: y(v), label: label(v) })) };
}
