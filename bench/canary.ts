// `npm run bench:canary`: how fast a canary whose signal turns bad is rolled back everywhere
// (issue 13): from the moment the analysis signal goes bad to 100% stable in the routes
// ConfigMap of every region's cluster, over 20 canaries with a 2 s analysis interval. Target:
// p99 < 5 s. The signal is a Prometheus stand-in in this process (answers /api/v1/query with the
// value the bench sets), so the figure is ctrl's reaction (check interval, rollback step, feed,
// krane's apply), not a scrape interval. Everything else is the real stack on an embedded
// PostgreSQL. RUNS=n overrides the sample size. Prints one JSON object on the last stdout line.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { startPostgres } from '../tests/helpers/postgres';
import { startStack } from '../src/modes/stack';
import { Watcher } from '../src/sync/watcher';
import { KubeClient } from '../src/kube/client';
import { SENTINEL_NAMESPACE } from '../src/sync/wire';

/** The sample size. */
const RUNS = Number(process.env.RUNS ?? 20);
const REGIONS = ['us-east-1', 'eu-west-1'];
/** The analysis interval: a bad value is seen at the next check, at most 2 s later. */
const INTERVAL = '2s';
/** ConfigMap polling step: small against the seconds measured. */
const POLL_MS = 10;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let errorRatio = 0;
const prometheus = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [Date.now() / 1000, String(errorRatio)] }] } }));
});
await new Promise<void>((r) => prometheus.listen(0, '127.0.0.1', r));
const prometheusUrl = `http://127.0.0.1:${(prometheus.address() as AddressInfo).port}`;

const pg = await startPostgres();
const stack = await startStack({
  databaseUrl: pg.adminUrl,
  regions: REGIONS,
  readyDelayMs: 0,
  logLevel: 'silent',
  sim: { minReadyScale: 0 },
  krane: { createWatcher: (o) => new Watcher(o) },
  // The stand-in Prometheus is plain http on 127.0.0.1: allowed explicitly (outbound policy).
  ctrl: { settings: { outboundAllow: '127.0.0.1' } },
});
const api = async (path: string, body?: unknown) => {
  const r = await fetch(stack.ctrl.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${stack.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return r.json() as Promise<any>;
};
const clients = REGIONS.map((r) => new KubeClient(stack.regions.get(r)!.sim.sim.kubeConfig()));
async function weightsEverywhere(expected: string): Promise<boolean> {
  for (const c of clients) {
    const cm = await c.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: SENTINEL_NAMESPACE, name: 'routes-default' });
    const w = cm ? JSON.parse((cm as any).data['routes.json']).backends.map((b: any) => `${b.deploymentId}:${b.weight}`).join(',') : '';
    if (w !== expected) return false;
  }
  return true;
}
async function waitFor(what: string, fn: () => Promise<boolean>, ms = 60_000) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`${what} not reached within ${ms} ms`);
    await sleep(POLL_MS);
  }
}
// force: each run's failing gate quarantines the image (issue 25); this measures the rollback, not the quarantine.
const create = async (strategy?: unknown) => (await api('/v1/deployments', { image: 'nginx:1.27', regions: REGIONS, replicas: 1, force: true, ...(strategy ? { strategy } : {}) })).id as string;

const rollbacks: number[] = [];
try {
  const stable = await create();
  await waitFor('stable at 100%', () => weightsEverywhere(`${stable}:100`));
  for (let i = 0; i < RUNS; i++) {
    errorRatio = 0;
    const canary = await create({ type: 'canary', steps: [{ weight: 50, pause: '10m' }], analysis: { interval: INTERVAL, prometheus: { url: prometheusUrl, query: 'errors', max: 0.05 } } });
    await waitFor('canary at 50%', () => weightsEverywhere(`${stable}:50,${canary}:50`));
    // Turn the signal bad at a random point of the check cycle, as a real incident would.
    await sleep(Math.random() * 2000);
    const t0 = performance.now();
    errorRatio = 0.5;
    await waitFor('100% stable again', () => weightsEverywhere(`${stable}:100`));
    rollbacks.push(performance.now() - t0);
  }
  const p99 = pct(rollbacks, 99);
  console.log(JSON.stringify({ bench: 'canary', runs: RUNS, interval: INTERVAL, rollbackMs: { p50: pct(rollbacks, 50), p99, max: Math.round(Math.max(...rollbacks)) }, targetP99Ms: 5000, ok: p99 < 5000 }));
} finally {
  await stack.close();
  prometheus.close();
  await pg.stop();
}
