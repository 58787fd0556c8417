// A stand-in for Prometheus' instant-query API (`GET /api/v1/query`) whose one answer the test
// sets: a value (a one-sample vector), or absent (an empty vector: "no data"). For tests that
// need the metric to change at an exact moment, which a real Prometheus (prometheus.ts) cannot
// promise: it scrapes on its own clock. Records each query, so a test can wait for a check
// to have happened instead of sleeping. No `after` hook: the caller closes it (bench code uses
// it too, outside node:test).
import { createServer } from 'node:http';

export interface StandInPrometheus {
  url: string;
  /** The value the next query answers; null: an empty vector (no data). */
  set(value: number | null): void;
  /** Queries answered so far. */
  queries(): number;
  /** The values answered to `query` (null: no data), in order. */
  answered(query: string): (number | null)[];
  close(): Promise<void>;
}

export async function startStandInPrometheus(initial: number | null = null): Promise<StandInPrometheus> {
  let value = initial;
  let asked = 0;
  const byQuery = new Map<string, (number | null)[]>();
  const server = createServer((req, res) => {
    if (!req.url?.startsWith('/api/v1/query')) {
      res.statusCode = 404;
      return void res.end();
    }
    asked++;
    const query = new URL(req.url, 'http://x').searchParams.get('query') ?? '';
    byQuery.set(query, [...(byQuery.get(query) ?? []), value]);
    const result = value === null ? [] : [{ metric: {}, value: [Date.now() / 1000, String(value)] }];
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    set: (v) => void (value = v),
    queries: () => asked,
    answered: (query) => byQuery.get(query) ?? [],
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
