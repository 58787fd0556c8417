// The Prometheus gate of a canary or blue-green (issue 13): one instant query per check
// (`GET <url>/api/v1/query`), judged against the bounds. No data (an empty vector, NaN, the
// server unreachable) is inconclusive, never a pass: the workflow fails closed when a step ends
// without a conclusive answer. The judgement is pure; the query is the only I/O.
import type { Analysis } from './strategy';
import type { OutboundPolicy } from '../outbound/policy';
import { getCapped, OutboundRefusedError } from '../outbound/post';

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
 * same policy as Slack webhooks). The check is made on the address the socket connects to (a
 * name may resolve elsewhere since the API accepted it, or between a check and a connect), and
 * at most MAX_ANSWER_BYTES of the answer are read.
 */
export async function queryPrometheus(p: NonNullable<Analysis['prometheus']>, policy: OutboundPolicy): Promise<AnalysisResult> {
  const url = new URL('api/v1/query', p.url.endsWith('/') ? p.url : `${p.url}/`);
  url.searchParams.set('query', p.query);
  let answer;
  try {
    answer = await getCapped(url.toString(), policy, { timeoutMs: QUERY_TIMEOUT_MS, maxBytes: MAX_ANSWER_BYTES });
  } catch (err) {
    const why = err instanceof OutboundRefusedError ? `prometheus ${err.message}` : `prometheus unreachable: ${(err as Error).message}`;
    return { verdict: 'inconclusive', value: null, reason: why };
  }
  if (answer.status < 200 || answer.status >= 300) return { verdict: 'inconclusive', value: null, reason: `prometheus answered ${answer.status}` };
  if (answer.text === null) return { verdict: 'inconclusive', value: null, reason: `prometheus answer over ${MAX_ANSWER_BYTES} bytes` };
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return { verdict: 'inconclusive', value: null, reason: 'prometheus answered with something that is not a Prometheus answer (not JSON)' };
  }
  return judge(sampleOf(body), p.min, p.max);
}
