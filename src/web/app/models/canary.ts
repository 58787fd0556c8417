// A canary's (or blue-green's) history for the chart: the weight this deployment receives over
// time and the analysis values measured at each step, with their bounds. Pure: events and
// snapshots in, series and SVG geometry out. Event fields are read leniently (API.md fixes the
// event names, not every field), so a missing field drops a point, never the page.
import type { Traffic } from '../../../cli/api.gen';

export interface WeightPoint {
  t: number;
  weight: number;
}

export interface AnalysisPoint {
  t: number;
  value: number | null;
  verdict: 'pass' | 'fail' | 'inconclusive';
}

export interface CanarySeries {
  weights: WeightPoint[];
  analysis: AnalysisPoint[];
  min?: number;
  max?: number;
}

/** Enough for a long canary at one point per step; older points scroll off. */
export const MAX_POINTS = 500;

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

export function weightOf(traffic: Pick<Traffic, 'backends'> | null | undefined, deploymentId: string): number | undefined {
  if (!traffic || !Array.isArray(traffic.backends)) return undefined;
  return traffic.backends.find((b) => b.deploymentId === deploymentId)?.weight ?? 0;
}

export function analysisFromEvent(e: Record<string, unknown>, t: number): (AnalysisPoint & { min?: number; max?: number }) | undefined {
  const value = num(e.value) ?? null;
  const raw = e.verdict ?? e.result ?? (typeof e.ok === 'boolean' ? (e.ok ? 'pass' : 'fail') : undefined);
  const verdict = raw === 'pass' || raw === 'fail' || raw === 'inconclusive' ? raw : value === null ? 'inconclusive' : 'pass';
  const min = num(e.min);
  const max = num(e.max);
  return { t: num(e.at) ?? (typeof e.at === 'string' ? Date.parse(e.at) || t : t), value, verdict, ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
}

export function addWeight(s: CanarySeries, p: WeightPoint): CanarySeries {
  const last = s.weights[s.weights.length - 1];
  // A repeated weight adds nothing to a step line; the line is drawn on to "now" anyway.
  if (last && last.weight === p.weight) return s;
  return { ...s, weights: [...s.weights, p].slice(-MAX_POINTS) };
}

/**
 * A traffic table applied to every series: each backend's weight, and 0 for a deployment the
 * page has charted that the table no longer lists. A rollback or a switch drops the loser from
 * the table rather than listing it at 0, so without this its line would stay at its last weight.
 */
export function applyTable(all: Record<string, CanarySeries>, backends: Traffic['backends'], t: number): Record<string, CanarySeries> {
  const next = { ...all };
  for (const id of new Set([...Object.keys(all), ...backends.map((b) => b.deploymentId)])) {
    next[id] = addWeight(next[id] ?? { weights: [], analysis: [] }, { t, weight: weightOf({ backends }, id) ?? 0 });
  }
  return next;
}

/**
 * The environment's table from its two sources in order: a read still in flight when a
 * `deployment.traffic` event arrived answers with the event's table, which is newer than what
 * it read. (Taken as it came, such a read drew a canary's line back down for a moment: 0 → 20 →
 * 0 → 20 → 50.)
 */
export function tableTracker() {
  let seen = 0;
  let latest: Traffic['backends'] | undefined;
  return {
    event(backends: Traffic['backends']): void {
      seen++;
      latest = backends;
    },
    async read(load: () => Promise<Traffic>): Promise<Traffic> {
      const before = seen;
      const t = await load();
      return seen !== before && latest ? { ...t, backends: latest } : t;
    },
  };
}

export function addAnalysis(s: CanarySeries, p: AnalysisPoint & { min?: number; max?: number }): CanarySeries {
  const { min, max, ...point } = p;
  return { ...s, analysis: [...s.analysis, point].slice(-MAX_POINTS), ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
}

export interface ChartGeometry {
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  /** Step line of the weight (0–100 % on the left axis). */
  weightPath: string;
  dots: { x: number; y: number; verdict: AnalysisPoint['verdict']; value: number }[];
  bounds: { y: number; label: string }[];
  yTicks: { y: number; label: string }[];
  /** Analysis axis (right), when there are values. */
  valueTicks: { y: number; label: string }[];
  xTicks: { x: number; label: string }[];
}

const r1 = (n: number) => Math.round(n * 10) / 10;

function clock(t: number): string {
  const d = new Date(t);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Geometry of the chart in an SVG viewBox of width × height; `now` ends the weight line. */
export function chartGeometry(s: CanarySeries, now: number, width = 640, height = 200): ChartGeometry {
  const plot = { left: 40, top: 10, right: width - 48, bottom: height - 24 };
  const times = [...s.weights.map((p) => p.t), ...s.analysis.map((p) => p.t)];
  const t0 = times.length ? Math.min(...times) : now - 60_000;
  const t1 = Math.max(now, t0 + 1000, ...times);
  const x = (t: number) => r1(plot.left + ((t - t0) / (t1 - t0)) * (plot.right - plot.left));
  const yw = (w: number) => r1(plot.bottom - (Math.min(100, Math.max(0, w)) / 100) * (plot.bottom - plot.top));

  let weightPath = '';
  s.weights.forEach((p, i) => {
    weightPath += i === 0 ? `M${x(p.t)} ${yw(p.weight)}` : `H${x(p.t)}V${yw(p.weight)}`;
  });
  if (s.weights.length) weightPath += `H${x(t1)}`;

  const values = s.analysis.flatMap((p) => (p.value === null ? [] : [p.value]));
  const lo0 = Math.min(...values, ...(s.min !== undefined ? [s.min] : []));
  const hi0 = Math.max(...values, ...(s.max !== undefined ? [s.max] : []));
  const has = Number.isFinite(lo0) && Number.isFinite(hi0);
  const pad = has ? (hi0 - lo0) * 0.1 || Math.abs(hi0) * 0.1 || 1 : 1;
  const lo = has ? lo0 - pad : 0;
  const hi = has ? hi0 + pad : 1;
  const yv = (v: number) => r1(plot.bottom - ((v - lo) / (hi - lo)) * (plot.bottom - plot.top));

  const dots = s.analysis.flatMap((p) => (p.value === null ? [] : [{ x: x(p.t), y: yv(p.value), verdict: p.verdict, value: p.value }]));
  const bounds = [
    ...(s.min !== undefined ? [{ y: yv(s.min), label: `min ${s.min}` }] : []),
    ...(s.max !== undefined ? [{ y: yv(s.max), label: `max ${s.max}` }] : []),
  ];
  const valueTicks = has ? [lo0, hi0].filter((v, i, a) => a.indexOf(v) === i).map((v) => ({ y: yv(v), label: String(Math.round(v * 1000) / 1000) })) : [];
  return {
    width,
    height,
    plot,
    weightPath,
    dots,
    bounds,
    yTicks: [0, 50, 100].map((w) => ({ y: yw(w), label: `${w}%` })),
    valueTicks,
    xTicks: [t0, t1].map((t) => ({ x: x(t), label: clock(t) })),
  };
}

/** A strategy in words: "canary 10% → 50% (pause 1m), analysis every 10s". */
export function strategyText(s: { type: string; steps?: { weight: number; pause?: string }[]; analysis?: { interval?: string } ; scaleDownDelay?: string }): string {
  let t = s.type;
  if (s.steps?.length) t += ` ${s.steps.map((x) => `${x.weight}%${x.pause ? ` (pause ${x.pause})` : ''}`).join(' → ')}`;
  if (s.scaleDownDelay) t += `, old version kept ${s.scaleDownDelay}`;
  if (s.analysis) t += `, analysis${s.analysis.interval ? ` every ${s.analysis.interval}` : ''}`;
  return t;
}
