// The one stand-in Prometheus: the HTTP query API's two endpoints, answered as the test says.
// - Instant queries (`GET /api/v1/query`, the threshold judge): one value for every query
//   (`set`), or a script of values answered one per query (then the last one stays); null is an
//   empty vector ("no data"). Each answer is recorded per query (`answered`), so a test waits
//   for evidence that a check happened instead of sleeping.
// - Range queries (`GET /api/v1/query_range`, the compare judge): a series per query, its
//   values a function of the deployment and region the query selects and the evaluation time
//   (`series`); `noisy` makes log-normal noise that is a pure function of (series, time), so
//   overlapping windows read the same points again, as from a real TSDB. Every range query is
//   recorded (`ranges`).
// A real Prometheus (prometheus.ts) scrapes on its own clock, so "the third check passes" or
// "the canary is 3x worse over this window" cannot be said exactly with it. No `after` hook:
// the caller closes it (bench code uses it too, outside node:test).
import { createServer } from 'node:http';

export interface Selector {
  metric: string;
  deployment: string;
  region: string;
}

/** The value at time `t` (ms) for the series a range query selects; null: no point (a gap). */
export type SeriesFn = (s: Selector, t: number) => number | null;

export interface RangeQuery {
  query: string;
  start: number;
  end: number;
  step: number;
}

export interface StandInPrometheus {
  url: string;
  /** The value every following instant query answers (a script in progress is dropped). */
  set(value: number | null): void;
  /** Answers these values one per instant query, then keeps answering the last one. */
  script(values: (number | null)[]): void;
  /** What range queries answer from now on. */
  series(fn: SeriesFn): void;
  /** Instant queries answered so far. */
  queries(): number;
  /** The values answered to instant query `query` (null: no data), in order. */
  answered(query: string): (number | null)[];
  /** Every range query received, decoded. */
  readonly ranges: RangeQuery[];
  close(): Promise<void>;
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

/** The matrix answer of a range query: evaluation times start, start + step, … up to end. */
function rangeAnswer(fn: SeriesFn, sel: Selector, r: RangeQuery) {
  const values: [number, string][] = [];
  for (let t = r.start; t <= r.end + 1e-9; t += r.step) {
    const v = fn(sel, Math.round(t * 1000));
    if (v !== null) values.push([Number(t.toFixed(3)), String(v)]);
  }
  return values.length ? [{ metric: { deployment: sel.deployment, region: sel.region }, values }] : [];
}

export async function startStandInPrometheus(initial: number | null = null, opts: { series?: SeriesFn } = {}): Promise<StandInPrometheus> {
  let value = initial;
  let queue: (number | null)[] = [];
  let seriesFn: SeriesFn = opts.series ?? (() => null);
  let asked = 0;
  const byQuery = new Map<string, (number | null)[]>();
  const ranges: RangeQuery[] = [];
  const answer = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const query = u.searchParams.get('query') ?? '';
    if (u.pathname === '/api/v1/query') {
      asked++;
      if (queue.length) value = queue.shift()!;
      byQuery.set(query, [...(byQuery.get(query) ?? []), value]);
      const result = value === null ? [] : [{ metric: {}, value: [Date.now() / 1000, String(value)] }];
      return answer(res, 200, { status: 'success', data: { resultType: 'vector', result } });
    }
    if (u.pathname === '/api/v1/query_range') {
      const [start, end, step] = ['start', 'end', 'step'].map((k) => Number(u.searchParams.get(k))) as [number, number, number];
      if (![start, end, step].every((x) => Number.isFinite(x)) || step <= 0) return answer(res, 400, { status: 'error', errorType: 'bad_data', error: 'bad start, end or step' });
      const r = { query, start, end, step };
      ranges.push(r);
      return answer(res, 200, { status: 'success', data: { resultType: 'matrix', result: rangeAnswer(seriesFn, parseSelector(query), r) } });
    }
    return answer(res, 404, { status: 'error', error: 'not found' });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    set: (v) => {
      queue = [];
      value = v;
    },
    script: (values) => void (queue = [...values]),
    series: (fn) => void (seriesFn = fn),
    queries: () => asked,
    answered: (query) => byQuery.get(query) ?? [],
    ranges,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
