// `npm run bench:deploy`: orchestration overhead of a deploy, create → ready, with the
// simulators' ready delay 0, over 20 deploys to two regions (issue 6: p50 < 1 s). The first
// deploy of an environment also creates and converges its sentinels; it is a warm-up and
// reported apart. Everything runs in-process on its own embedded PostgreSQL.
//
// Tracing overhead (issue 17): the same run measures with tracing off and on, in alternating
// rounds (off, on, off, on) so drift on a shared machine hits both alike. On means the real
// thing: the OTLP/HTTP exporter with its batch processor, posting to a receiver in this
// process that counts spans and discards them.
// `--concurrent 1000`: instead, N deployments created at once (issue 28) on one stack; reports
// create → ready p50/p99, the total, the most connections ctrl held (its pool is bounded at 10),
// how long a query waited for one of them (a probe through ctrl's pool), the engine leases
// lost, CPU and database transactions per deploy, and whether any deploy failed.
// Prints one JSON object on the last stdout line.
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { startPostgres } from '../tests/helpers/postgres';
import { startStack, type StackHandle } from '../src/modes/stack';
import { Watcher } from '../src/sync/watcher';
import { startTracing } from '../src/tracing';

/** The sample size, per mode (tracing off, tracing on). */
const DEPLOYS = 20;
/** Alternating rounds per mode; each round is a fresh stack on the same database. */
const ROUNDS = 2;
/** Status polling step: small against the latencies measured, cheap for Postgres. */
const POLL_MS = 2;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
};

const pg = await startPostgres();

/** An OTLP/HTTP receiver that counts what it is sent. */
let spansReceived = 0;
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    for (const rs of JSON.parse(body || '{}').resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spansReceived += ss.spans?.length ?? 0;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

function stackUp(): Promise<StackHandle> {
  return startStack({
    databaseUrl: pg.adminUrl,
    regions: ['us-east-1', 'eu-west-1'],
    readyDelayMs: 0,
    logLevel: 'silent',
    // minReadySeconds of sentinels would add 5 real seconds to the warm-up only; scale it away.
    sim: { minReadyScale: 0 },
    krane: { createWatcher: (o) => new Watcher(o) },
  });
}

async function deployOnce(stack: StackHandle): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(`${stack.ctrl.url}/v1/deployments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 2 }),
  });
  const { id } = (await r.json()) as { id: string };
  for (;;) {
    const [row] = await stack.ctrl.sql<{ status: string; error: string | null }[]>`SELECT status, error FROM deployments WHERE id = ${id}`;
    if (row?.status === 'ready') return performance.now() - t0;
    if (row?.status === 'failed') throw new Error(`deploy failed: ${row.error}`);
    await new Promise((res) => setTimeout(res, POLL_MS));
  }
}

/** One round: a fresh stack (tracing as set when it starts), a warm-up deploy, then `n` measured. */
async function round(tracing: boolean, n: number): Promise<{ warmup: number; samples: number[] }> {
  const handle = tracing ? startTracing({ serviceName: 'bench', endpoint: receiverUrl }) : null;
  const stack = await stackUp();
  try {
    const warmup = await deployOnce(stack);
    const samples: number[] = [];
    for (let i = 0; i < n; i++) samples.push(await deployOnce(stack));
    return { warmup, samples };
  } finally {
    await stack.close();
    await handle?.shutdown();
  }
}

const summary = (xs: number[]) => ({ p50: pct(xs, 50), p99: pct(xs, 99), min: Math.round(Math.min(...xs)), max: Math.round(Math.max(...xs)) });

const CONCURRENT = Number(parseArgs({ options: { concurrent: { type: 'string', default: '0' } } }).values.concurrent);

/** Posts one deployment; its id and when the request was sent. */
async function create(stack: StackHandle): Promise<{ id: string; t0: number }> {
  const t0 = performance.now();
  const r = await fetch(`${stack.ctrl.url}/v1/deployments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 1 }),
  });
  if (r.status !== 202) throw new Error(`create answered ${r.status}: ${await r.text()}`);
  return { id: ((await r.json()) as { id: string }).id, t0 };
}

/** ctrl's engine_leases_lost_total: executions dropped because their lease lapsed or was taken. */
async function leasesLost(stack: StackHandle): Promise<number> {
  const text = await (await fetch(`${stack.ctrl.url}/metrics`)).text();
  return Number(/^engine_leases_lost_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** N deploys created at once: each one's create → ready, watched with one query per poll. */
async function concurrent(n: number) {
  const stack = await stackUp();
  try {
    await deployOnce(stack);
    const sql = stack.ctrl.sql;
    const xacts = async () => Number((await sql<{ n: string }[]>`SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n);
    const x0 = await xacts();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const made = await Promise.all(Array.from({ length: n }, () => create(stack)));
    const createdMs = performance.now() - t0;
    const start = new Map(made.map((m) => [m.id, m.t0]));
    const readyMs: number[] = [];
    const failed: string[] = [];
    let maxConnections = 0;
    // A trivial query through ctrl's own pool, timed each round: beyond its own few
    // milliseconds it is the wait for a free connection, which every step of a workflow shares.
    const probeMs: number[] = [];
    const leasesLost0 = await leasesLost(stack);
    while (start.size > 0) {
      const p0 = performance.now();
      await sql`SELECT 1`;
      probeMs.push(performance.now() - p0);
      const rows = await sql<{ id: string; status: string; error: string | null }[]>`SELECT id, status, error FROM deployments WHERE id = ANY(${[...start.keys()]}::text[]) AND status IN ('ready', 'failed')`;
      const now = performance.now();
      for (const r of rows) {
        if (r.status === 'ready') readyMs.push(now - start.get(r.id)!);
        else failed.push(`${r.id}: ${r.error}`);
        start.delete(r.id);
      }
      const [c] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'unkey-infra-ctrl'`;
      maxConnections = Math.max(maxConnections, c!.n);
      await new Promise((res) => setTimeout(res, 50));
    }
    const totalMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return {
      bench: 'deploy-concurrent',
      concurrent: n,
      regions: 2,
      readyDelayMs: 0,
      createRequestsMs: Math.round(createdMs),
      createToReadyMs: readyMs.length ? summary(readyMs) : null,
      totalMs: Math.round(totalMs),
      ready: readyMs.length,
      failed: failed.length,
      failedSample: failed.slice(0, 3),
      ctrlMaxConnections: maxConnections,
      poolWaitProbeMs: summary(probeMs),
      engineLeasesLost: (await leasesLost(stack)) - leasesLost0,
      // ctrl, both simulators and both kranes share this process: the whole system's CPU.
      cpuMsPerDeploy: Math.round((cpu.user + cpu.system) / 1000 / n),
      dbTransactionsPerDeploy: Math.round((((await xacts()) - x0) / n) * 10) / 10,
    };
  } finally {
    await stack.close();
  }
}

/** The default run: create → ready one at a time, tracing off and on in alternating rounds. */
async function tracingRounds() {
  const off: number[] = [];
  const on: number[] = [];
  let firstDeployWithSentinelsMs = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const a = await round(false, DEPLOYS / ROUNDS);
    if (i === 0) firstDeployWithSentinelsMs = Math.round(a.warmup);
    off.push(...a.samples);
    on.push(...(await round(true, DEPLOYS / ROUNDS)).samples);
  }
  const p50Off = pct(off, 50);
  return {
    bench: 'deploy',
    deploys: DEPLOYS,
    regions: 2,
    replicas: 2,
    readyDelayMs: 0,
    firstDeployWithSentinelsMs,
    createToReadyMs: summary(off),
    tracing: {
      onCreateToReadyMs: summary(on),
      p50OverheadMs: pct(on, 50) - p50Off,
      p50OverheadPct: Math.round(((pct(on, 50) - p50Off) / p50Off) * 1000) / 10,
      spansExported: spansReceived,
      rounds: ROUNDS,
    },
    target: { p50Ms: 1000 },
  };
}

try {
  console.log(JSON.stringify(CONCURRENT > 0 ? await concurrent(CONCURRENT) : await tracingRounds()));
} finally {
  receiver.close();
  await pg.stop();
}
