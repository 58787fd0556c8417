// A stand-in Prometheus for lifecycle tests: answers instant queries (`GET /api/v1/query`) with
// a value the test sets, or with an empty vector (no data), the way Prometheus's HTTP API does.
// A real Prometheus (tests/helpers/prometheus.ts) scrapes on its own clock, so "every check
// fails" or "the third check passes" cannot be said exactly with it; here each answer is the
// test's, and each query is counted, so a test can wait for evidence that a check happened.
import { after } from 'node:test';
import { createServer } from 'node:http';

export interface StandInPrometheus {
  url: string;
  /** The value every following query answers; null answers no data. */
  set(value: number | null): void;
  /** Answers these values one per query, then keeps answering the last one. */
  script(values: (number | null)[]): void;
  /** Queries answered so far. */
  readonly queries: number;
}

export async function startStandInPrometheus(value: number | null): Promise<StandInPrometheus> {
  let current = value;
  let queue: (number | null)[] = [];
  let queries = 0;
  const server = createServer((req, res) => {
    if (!req.url?.startsWith('/api/v1/query')) {
      res.statusCode = 404;
      res.end();
      return;
    }
    queries++;
    if (queue.length) current = queue.shift()!;
    const result = current === null ? [] : [{ metric: {}, value: [Date.now() / 1000, String(current)] }];
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => server.close());
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    set: (v) => {
      queue = [];
      current = v;
    },
    script: (values) => {
      queue = [...values];
    },
    get queries() {
      return queries;
    },
  };
}
