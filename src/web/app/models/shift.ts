// The compare judge's evidence over time for one region (issue 37): each check's estimate of how
// much worse the canary is, its fixed-sample interval and its anytime interval, against the
// tolerance, as SVG geometry. Read leniently from the deployment view's `analysis.checks[]` (a
// check without a field loses its mark, never the page); unbounded ends arrive as null (JSON has
// no Infinity) and are drawn to the plot's edge. Pure.

export interface ShiftPoint {
  t: number;
  verdict: 'pass' | 'fail' | 'inconclusive';
  estimate: number;
  low: number;
  high: number;
  /** The anytime interval: ±Infinity where a bound is not yet reached. */
  anytimeLow: number;
  anytimeHigh: number;
  reachable: boolean;
  coverage: number | null;
  /** The shift at the tolerance boundary, and the stable's level (median or error rate). */
  tolerance: number;
  level: number | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
/** A bound: a number, or null/absent as unbounded on its side. */
const bound = (v: unknown, open: number) => num(v) ?? open;

/** The region's compare checks that carry a shift, oldest first (the order the view lists them). */
export function shiftTrail(checks: unknown, region: string): ShiftPoint[] {
  if (!Array.isArray(checks)) return [];
  const out: ShiftPoint[] = [];
  for (const raw of checks as Record<string, unknown>[]) {
    if (raw?.judge !== 'compare' || raw.region !== region) continue;
    const s = raw.shift as Record<string, unknown> | null | undefined;
    const estimate = num(s?.estimate);
    const tolerance = num(s?.tolerance);
    if (!s || estimate === null || tolerance === null) continue;
    const t = typeof raw.at === 'string' ? Date.parse(raw.at) : num(raw.at);
    const any = (s.anytime ?? {}) as Record<string, unknown>;
    const v = raw.verdict;
    out.push({
      t: t !== null && Number.isFinite(t) ? t : out.length,
      verdict: v === 'pass' || v === 'fail' ? v : 'inconclusive',
      estimate,
      low: bound(s.low, -Infinity),
      high: bound(s.high, Infinity),
      anytimeLow: bound(any.low, -Infinity),
      anytimeHigh: bound(any.high, Infinity),
      reachable: s.reachable !== false,
      coverage: num(s.coverage),
      tolerance,
      level: num(((raw.baseline ?? {}) as Record<string, unknown>).median),
    });
  }
  return out;
}

export interface ShiftMark {
  x: number;
  y: number;
  /** The fixed interval's ends and the anytime interval's (clipped to the plot; `open` where unbounded or clipped). */
  low: number;
  high: number;
  anyLow: number;
  anyHigh: number;
  openLow: boolean;
  openHigh: boolean;
  verdict: ShiftPoint['verdict'];
  reachable: boolean;
  title: string;
}

export interface ShiftGeometry {
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  /** "ratio": values as multiples of the stable's level; "difference": canary − stable. */
  units: 'ratio' | 'difference';
  /** y of "as good as the stable" (1× or 0). */
  equalY: number;
  /** The tolerance: a line in ratio units, a step path in differences (it moves with the stable). */
  tolerancePath: string;
  toleranceLabel: string;
  /** Where the label goes: just above the tolerance's last height. */
  toleranceLabelY: number;
  marks: ShiftMark[];
  yTicks: { y: number; label: string }[];
}

const r1 = (n: number) => Math.round(n * 10) / 10;
const label = (v: number, units: ShiftGeometry['units']) => (units === 'ratio' ? `${Number(v.toPrecision(3))}×` : String(Number(v.toPrecision(3))));

/**
 * The points on one axis. Ratios when every point has a stable level to divide by (the reason's
 * words are ratios too), else differences. The axis spans the estimates, the fixed intervals,
 * equality and the tolerance; the anytime interval is clipped to it (it starts unbounded).
 */
export function shiftGeometry(points: ShiftPoint[], width = 640, height = 180): ShiftGeometry {
  const plot = { left: 52, top: 10, right: width - 12, bottom: height - 18 };
  const ratio = points.length > 0 && points.every((p) => p.level !== null && p.level !== 0);
  const units: ShiftGeometry['units'] = ratio ? 'ratio' : 'difference';
  const v = (p: ShiftPoint, d: number) => (ratio ? (p.level! + d) / p.level! : d);
  const equal = ratio ? 1 : 0;
  const finite = (xs: number[]) => xs.filter((x) => Number.isFinite(x));
  const values = finite(points.flatMap((p) => [v(p, p.estimate), v(p, p.low), v(p, p.high), v(p, p.tolerance)]));
  let lo = Math.min(equal, ...values);
  let hi = Math.max(equal, ...values);
  if (!(hi > lo)) [lo, hi] = [equal - 1, equal + 1];
  const pad = (hi - lo) * 0.05;
  [lo, hi] = [lo - pad, hi + pad];
  const y = (value: number) => r1(plot.bottom - ((Math.min(hi, Math.max(lo, value)) - lo) / (hi - lo)) * (plot.bottom - plot.top));
  const t0 = Math.min(...points.map((p) => p.t));
  const t1 = Math.max(...points.map((p) => p.t));
  const x = (t: number) => r1(plot.left + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * (plot.right - plot.left));
  const marks = points.map((p): ShiftMark => {
    const any = [v(p, p.anytimeLow), v(p, p.anytimeHigh)];
    const coverage = p.coverage !== null ? ` (covers ${Math.round(p.coverage * 100)}%${p.reachable ? '' : ', too few samples for its level'})` : '';
    return {
      x: x(p.t),
      y: y(v(p, p.estimate)),
      low: y(v(p, p.low)),
      high: y(v(p, p.high)),
      anyLow: y(any[0]!),
      anyHigh: y(any[1]!),
      openLow: !(any[0]! >= lo),
      openHigh: !(any[1]! <= hi),
      verdict: p.verdict,
      reachable: p.reachable,
      title: `${p.verdict}: ${label(v(p, p.estimate), units)}, interval ${label(v(p, p.low), units)} to ${label(v(p, p.high), units)}${coverage}; anytime ${Number.isFinite(any[0]!) ? label(any[0]!, units) : '−∞'} to ${Number.isFinite(any[1]!) ? label(any[1]!, units) : '∞'}`,
    };
  });
  const tol = points.map((p) => ({ x: x(p.t), y: y(v(p, p.tolerance)) }));
  const tolerancePath = ratio || tol.length < 2
    ? `M${plot.left} ${tol[0]?.y ?? y(equal)}H${plot.right}`
    : tol.map((q, i) => `${i === 0 ? `M${plot.left} ${q.y}` : `H${q.x}V${q.y}`}`).join('') + `H${plot.right}`;
  const last = points[points.length - 1];
  return {
    width,
    height,
    plot,
    units,
    equalY: y(equal),
    tolerancePath,
    toleranceLabel: last ? `tolerance ${label(v(last, last.tolerance), units)}` : 'tolerance',
    toleranceLabelY: Math.max(plot.top + 8, (tol[tol.length - 1]?.y ?? y(equal)) - 4),
    marks,
    yTicks: [lo + pad, hi - pad].map((value) => ({ y: y(value), label: label(value, units) })),
  };
}
