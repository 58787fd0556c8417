// A stand-in Prometheus for the compare judge (issue 27): it answers `GET /api/v1/query_range`
// with one series per query, whose values the test defines as a function of the deployment and
// region the query selects (`{deployment="…",region="…"}` labels) and the evaluation time. The
// noise is a pure function of (series key, timestamp), so overlapping windows read the same
// points again, as from a real TSDB. It records every query, so tests can show what was asked.
import { after } from 'node:test';
import { createServer } from 'node:http';

export interface Selector {
  metric: string;
  deployment: string;
  region: string;
}

/** The value at time `t` (ms) for the series a query selects; null: no point (a gap). */
export type SeriesFn = (s: Selector, t: number) => number | null;

export interface SeriesPrometheus {
  url: string;
  /** Every query_range received, decoded. */
  queries: { query: string; start: number; end: number; step: number }[];
  set(fn: SeriesFn): void;
}

/** A uniform in (0, 1) from a string and a number (FNV-1a, then a 32-bit mix). Pure. */
function unit(key: string, t: number, salt: number): number {
  let h = 2166136261 ^ salt;
  for (const ch of `${key}@${t}`) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  h ^= h >>> 15;
  h = Math.imul(h, 2246822507);
  h ^= h >>> 13;
  return ((h >>> 0) + 0.5) / 4294967296;
}

/** `level` × a log-normal factor with σ `sigma`, fixed per (key, t): a noisy series around a level. */
export function noisy(level: number, key: string, t: number, sigma = 0.3): number {
  const z = Math.sqrt(-2 * Math.log(unit(key, t, 1))) * Math.cos(2 * Math.PI * unit(key, t, 2));
  return level * Math.exp(sigma * z - (sigma * sigma) / 2);
}

export function parseSelector(query: string): Selector {
  const labels = Object.fromEntries([...query.matchAll(/(\w+)\s*=\s*"([^"]*)"/g)].map((m) => [m[1], m[2]]));
  return { metric: /^\s*(?:\w+\()*\s*([a-zA-Z_:][\w:]*)/.exec(query)?.[1] ?? '', deployment: labels.deployment ?? '', region: labels.region ?? '' };
}

export async function startSeriesPrometheus(fn: SeriesFn): Promise<SeriesPrometheus> {
  let current = fn;
  const queries: SeriesPrometheus['queries'] = [];
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (u.pathname !== '/api/v1/query_range') {
      res.statusCode = 404;
      return res.end(JSON.stringify({ status: 'error', error: 'not found' }));
    }
    const query = u.searchParams.get('query') ?? '';
    const [start, end, step] = ['start', 'end', 'step'].map((k) => Number(u.searchParams.get(k)));
    if (![start, end, step].every((x) => Number.isFinite(x)) || step! <= 0) {
      res.statusCode = 400;
      return res.end(JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'bad start, end or step' }));
    }
    queries.push({ query, start: start!, end: end!, step: step! });
    const sel = parseSelector(query);
    const values: [number, string][] = [];
    // Evaluation times as Prometheus takes them: start, start + step, … up to end.
    for (let t = start!; t <= end! + 1e-9; t += step!) {
      const tMs = Math.round(t * 1000);
      const v = current(sel, tMs);
      if (v !== null) values.push([Number(t.toFixed(3)), String(v)]);
    }
    const result = values.length ? [{ metric: { deployment: sel.deployment, region: sel.region }, values }] : [];
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'matrix', result } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, queries, set: (f) => void (current = f) };
}
