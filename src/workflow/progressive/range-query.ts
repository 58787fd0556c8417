// The compare judge's reads (issue 27): one Prometheus `query_range` per series, with the query's
// template filled in for one deployment in one region. Through the same outbound-checked GET as
// the threshold gate (analysis.ts), so the URL passes the outbound policy on every read.
import type { OutboundPolicy } from '../outbound/policy';
import { getCapped, OutboundRefusedError } from '../outbound/post';

/**
 * A series read, or why there is none (unreachable, refused, not one series). Values keep NaN and
 * ±Inf (a ratio over a window without requests), which the judge counts as dropped; times are the
 * samples' timestamps in ms, to pair an error series with its request series.
 */
export type SeriesRead = { ok: true; values: number[]; times: number[] } | { ok: false; reason: string };

/** A range query answers in the time one check may take; the check interval is the pace. */
const QUERY_TIMEOUT_MS = 5_000;
/**
 * Prometheus refuses more than 11,000 points per series; 10,000 samples at ~30 bytes each is
 * well under this cap, which keeps a runaway answer from filling ctrl's memory.
 */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
export const MAX_POINTS = 10_000;

/** Replaces `$deployment`, `$region` and `$step` (a Prometheus duration in ms). Pure. */
export function fillTemplate(query: string, v: { deployment: string; region: string; stepMs: number }): string {
  return query.replaceAll('$deployment', v.deployment).replaceAll('$region', v.region).replaceAll('$step', `${v.stepMs}ms`);
}

/**
 * The range step: ten samples per check interval, so `minSamples` (20 by default) is reached in a
 * couple of checks; coarser when the window would pass MAX_POINTS (a long canary). Pure.
 */
export function rangeStep(intervalMs: number, windowMs: number): number {
  return Math.max(1, Math.ceil(intervalMs / 10), Math.ceil(windowMs / MAX_POINTS));
}

/** Pure: the values of a `query_range` answer, which must hold at most one series (none: no data). */
export function seriesOf(body: unknown): SeriesRead {
  const b = body as { status?: string; data?: { resultType?: string; result?: unknown } };
  if (b?.status !== 'success' || b.data?.resultType !== 'matrix' || !Array.isArray(b.data.result)) return { ok: false, reason: 'prometheus answered with something that is not a range query answer' };
  const result = b.data.result as { values?: [number, string][] }[];
  if (result.length === 0) return { ok: true, values: [], times: [] };
  if (result.length > 1) return { ok: false, reason: `the query returned ${result.length} series; aggregate it to one per deployment (sum, avg)` };
  const points = result[0]!.values ?? [];
  return { ok: true, values: points.map((v) => sampleValue(v[1])), times: points.map((v) => Math.round(Number(v[0]) * 1000)) };
}

/** Prometheus writes non-finite values as "NaN", "+Inf" and "-Inf"; Number() reads only the first. */
const sampleValue = (s: unknown): number => (s === '+Inf' ? Infinity : s === '-Inf' ? -Infinity : Number(s));

export async function queryRange(url: string, query: string, window: { startMs: number; endMs: number; stepMs: number }, policy: OutboundPolicy): Promise<SeriesRead> {
  const u = new URL('api/v1/query_range', url.endsWith('/') ? url : `${url}/`);
  u.searchParams.set('query', query);
  u.searchParams.set('start', (window.startMs / 1000).toFixed(3));
  u.searchParams.set('end', (window.endMs / 1000).toFixed(3));
  u.searchParams.set('step', (window.stepMs / 1000).toFixed(3));
  let answer;
  try {
    answer = await getCapped(u.toString(), policy, { timeoutMs: QUERY_TIMEOUT_MS, maxBytes: MAX_ANSWER_BYTES });
  } catch (err) {
    return { ok: false, reason: err instanceof OutboundRefusedError ? `prometheus ${err.message}` : `prometheus unreachable: ${(err as Error).message}` };
  }
  if (answer.status < 200 || answer.status >= 300) return { ok: false, reason: `prometheus answered ${answer.status}` };
  if (answer.text === null) return { ok: false, reason: `prometheus answer over ${MAX_ANSWER_BYTES} bytes` };
  try {
    return seriesOf(JSON.parse(answer.text));
  } catch {
    return { ok: false, reason: 'prometheus answered with something that is not a Prometheus answer (not JSON)' };
  }
}
