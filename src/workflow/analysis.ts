// The Prometheus gate of a canary or blue-green (issue 13): one instant query per check
// (`GET <url>/api/v1/query`), judged against the bounds. No data (an empty vector, NaN, the
// server unreachable) is inconclusive, never a pass: the workflow fails closed when a step ends
// without a conclusive answer. The judgement is pure; the query is the only I/O.
import type { Analysis } from './strategy';
import { destinationProblem, type OutboundPolicy } from './outbound';

export type Verdict = 'pass' | 'fail' | 'inconclusive';

export interface AnalysisResult {
  verdict: Verdict;
  value: number | null;
  reason: string | null;
}

/** A query that takes longer than this is inconclusive; the check interval is the pace, not it. */
const QUERY_TIMEOUT_MS = 5_000;
/** An instant query for one value answers in a few hundred bytes; more is not an answer to us. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** Pure: where a value stands against [min, max] (either bound may be absent). */
export function judge(value: number | null, min: number | undefined, max: number | undefined): AnalysisResult {
  if (value === null || Number.isNaN(value)) return { verdict: 'inconclusive', value: null, reason: 'no data' };
  if (min !== undefined && value < min) return { verdict: 'fail', value, reason: `${value} is below the minimum ${min}` };
  if (max !== undefined && value > max) return { verdict: 'fail', value, reason: `${value} is above the maximum ${max}` };
  return { verdict: 'pass', value, reason: null };
}

/** Pure: the first sample of an instant query's answer, or null when it holds none. */
export function sampleOf(body: unknown): number | null {
  const data = (body as { status?: string; data?: { resultType?: string; result?: unknown } })?.data;
  if ((body as { status?: string })?.status !== 'success' || !data) return null;
  if (data.resultType === 'scalar' && Array.isArray(data.result)) return Number(data.result[1]);
  if (data.resultType !== 'vector' || !Array.isArray(data.result) || data.result.length === 0) return null;
  const v = (data.result[0] as { value?: [number, string] }).value;
  return v ? Number(v[1]) : null;
}

/**
 * The URL is the API caller's choice, so ctrl asks it only where the outbound policy allows (the
 * same policy as Slack webhooks; checked again here, as a name may resolve elsewhere since the
 * API accepted it), and reads at most MAX_ANSWER_BYTES of the answer.
 */
export async function queryPrometheus(p: NonNullable<Analysis['prometheus']>, policy: OutboundPolicy, fetchImpl: typeof fetch = fetch): Promise<AnalysisResult> {
  const url = new URL('api/v1/query', p.url.endsWith('/') ? p.url : `${p.url}/`);
  url.searchParams.set('query', p.query);
  const refused = await destinationProblem(url.toString(), policy);
  if (refused) return { verdict: 'inconclusive', value: null, reason: `prometheus url refused: ${refused}` };
  try {
    const res = await fetchImpl(url, { signal: AbortSignal.timeout(QUERY_TIMEOUT_MS), redirect: 'error' });
    if (!res.ok) return { verdict: 'inconclusive', value: null, reason: `prometheus answered ${res.status}` };
    const text = await readCapped(res, MAX_ANSWER_BYTES);
    if (text === null) return { verdict: 'inconclusive', value: null, reason: `prometheus answer over ${MAX_ANSWER_BYTES} bytes` };
    return judge(sampleOf(JSON.parse(text)), p.min, p.max);
  } catch (err) {
    return { verdict: 'inconclusive', value: null, reason: `prometheus unreachable: ${(err as Error).message}` };
  }
}

/** The body as text, or null once it passes `max` bytes (the rest is not read). */
async function readCapped(res: Response, max: number): Promise<string | null> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let n = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    n += chunk.byteLength;
    if (n > max) return null; // leaving the loop cancels the rest of the body
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
