// bench:judge's wire part: some runs' series served by a stand-in Prometheus answering
// query_range and read with the workflow's queryRange, to show the judge reaches the same
// verdict and p-value from the wire as from the arrays (what the simulation measures is what
// the workflow would decide).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compareSeries, type CompareOptions } from '../../src/workflow/progressive/judge';
import { queryRange } from '../../src/workflow/progressive/range-query';
import { latency, rng, SAMPLES_PER_CHECK, type Run } from './scenarios';

export async function wire(runs: number, looks: number, options: CompareOptions) {
  const stepMs = 1000;
  const start = 1_700_000_000_000;
  let current: Run = { baseline: [], canary: [] };
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const q = u.searchParams.get('query') ?? '';
    const [s, e] = ['start', 'end'].map((k) => Math.round(Number(u.searchParams.get(k)) * 1000));
    const series = q.includes('"canary"') ? current.canary : current.baseline;
    const values: [number, string][] = [];
    for (let t = s!; t <= e!; t += stepMs) {
      const i = (t - start) / stepMs;
      if (i >= 0 && i < series.length) values.push([t / 1000, String(series[i])]);
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [{ metric: {}, values }] } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const policy = { allow: [{ host: '127.0.0.1', port: null }] };
  const sc = latency('wire', 'worse', 1.5, 0.5);
  let same = 0;
  let checks = 0;
  const t0 = performance.now();
  try {
    for (let i = 0; i < runs; i++) {
      current = sc.make(rng(9_999_000 + i), looks * SAMPLES_PER_CHECK);
      for (let k = 1; k <= looks; k++) {
        const n = k * SAMPLES_PER_CHECK;
        const window = { startMs: start, endMs: start + (n - 1) * stepMs, stepMs };
        const [b, c] = await Promise.all(['stable', 'canary'].map((who) => queryRange(url, `m{deployment="${who}"}`, window, policy)));
        if (!b!.ok || !c!.ok) throw new Error('wire read failed');
        const viaWire = compareSeries({ baseline: b!.values, canary: c!.values }, options);
        const direct = compareSeries({ baseline: current.baseline.slice(0, n), canary: current.canary.slice(0, n) }, options);
        checks++;
        if (viaWire.verdict === direct.verdict && viaWire.pValue === direct.pValue) same++;
        if (direct.verdict === 'fail') break;
      }
    }
  } finally {
    server.close();
  }
  return { runs, checks, sameVerdictAndP: same, msPerCheck: Math.round(((performance.now() - t0) / Math.max(1, checks)) * 100) / 100 };
}
