// `npm run bench:rollout [-- --sentinels 10000] [--clusters per-region|shared] [--web]`: a fleet
// rollout of 1,000 sentinels by default (half as many environments × 2 regions) with the
// simulators' ready delay 0: total time from start to `completed`, ctrl's peak memory and CPU,
// and the database's transactions per sentinel. Targets: 1,000 in under 30 s; 10,000 in under
// 120 s with ctrl's peak RSS under 512 MiB (issue 28).
// ctrl runs as its own process (the built bundle) so its peak RSS (VmHWM) and CPU are its own.
// The simulated clusters and their kranes run in child processes (bench/_kube-sim-child.ts),
// one per region by default (--clusters shared: one for both): in this process, 10,000
// sentinels' pod churn starved the kranes' heartbeats and ctrl rightly took the regions for
// offline. Each child's peak RSS and CPU are reported too.
// BENCH_LOG_DIR=DIR keeps ctrl's and the kranes' logs (at info) there; BENCH_CPU_PROF_DIR=DIR
// has the cluster children write CPU profiles there.
// --ctrl-heap-mib N: ctrl runs with V8's old space capped at N MiB (--max-old-space-size), as
// production should set it under ctrl's memory limit; unset, V8 sizes the heap from this
// machine's memory and lets garbage pile up before a major collection.
// --web: then opens the finished rollout's page in headless Chromium and reports webRenderMs
// (bench/_web-render.ts says exactly what is timed; target under 1 s).
// Prints one JSON object on the last stdout line.
import { performance } from 'node:perf_hooks';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { startPostgres, freePort } from '../tests/helpers/postgres';
import { cleanEnv, ensureBundle } from '../tests/helpers/bundle';
import { createDb, cilium, sentinels, tenancy, withTx } from '../src/store';
import { newId } from '../src/ids';
import { measureWebRender } from './_web-render';

const args = parseArgs({
  options: { sentinels: { type: 'string', default: '1000' }, clusters: { type: 'string', default: 'per-region' }, web: { type: 'boolean', default: false }, 'ctrl-heap-mib': { type: 'string' } },
}).values;
const REGIONS = ['us-east-1', 'eu-west-1'];
/** BENCH_LOG_DIR: ctrl's and the kranes' logs at info go there (ctrl.log, krane-REGION.log). */
const LOG_DIR = process.env.BENCH_LOG_DIR;
if (LOG_DIR) mkdirSync(LOG_DIR, { recursive: true });
/** BENCH_CPU_PROF_DIR: the cluster children write V8 CPU profiles there when they exit. */
const PROF_DIR = process.env.BENCH_CPU_PROF_DIR;
/** The fleet: environments × 2 regions, one sentinel in each. */
const ENVIRONMENTS = Math.ceil(Number(args.sentinels) / REGIONS.length);
const FLEET = ENVIRONMENTS * REGIONS.length;
if (!Number.isInteger(ENVIRONMENTS) || ENVIRONMENTS < 1) throw new Error(`--sentinels must be a positive integer (got ${args.sentinels})`);
if (args.clusters !== 'per-region' && args.clusters !== 'shared') throw new Error(`--clusters must be per-region or shared (got ${args.clusters})`);
const CTRL_HEAP_MIB = args['ctrl-heap-mib'] === undefined ? undefined : Number(args['ctrl-heap-mib']);
if (CTRL_HEAP_MIB !== undefined && !(Number.isInteger(CTRL_HEAP_MIB) && CTRL_HEAP_MIB >= 64)) throw new Error(`--ctrl-heap-mib must be a whole number of MiB, at least 64 (got ${args['ctrl-heap-mib']})`);
/** Which regions each child process runs. */
const GROUPS = args.clusters === 'shared' ? [REGIONS] : REGIONS.map((r) => [r]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A process's user + system CPU so far, in seconds (clock ticks of /proc/PID/stat, 100 per second on Linux). */
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const peakRssMib = (pid: number) => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : null;
};

/** ctrl's nodejs_heap_size_used_bytes, in MiB (0 when unreadable). */
const heapUsedMib = async () => {
  const text = await fetch(`${url}/metrics`).then((r) => r.text(), () => '');
  return Math.round(Number(/^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0) / 2 ** 20);
};
const api = (path: string, init: RequestInit = {}) =>
  fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${adminToken}`, ...(init.body ? { 'content-type': 'application/json' } : {}) } }).then((r) => r.json());

/** Every process this bench started: killed however it ends (the children also exit when
 *  their IPC channel to this process closes, should this one die by SIGKILL). */
const procs: ChildProcess[] = [];
const names = new Map<ChildProcess, string>();
process.on('exit', () => procs.forEach((p) => p.exitCode === null && p.kill('SIGKILL')));
// Without these a signal would end this process without running the 'exit' handler above.
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

/** Throws when ctrl or a cluster child has died: a wait for progress would otherwise hang. */
function assertAlive(): void {
  for (const p of procs) if (p.exitCode !== null || p.signalCode !== null) throw new Error(`${names.get(p)} (pid ${p.pid}) exited (${p.exitCode ?? p.signalCode})`);
}

/** One child per group of regions, each running a simulator and a krane per region; resolves
 *  once every krane has started. */
async function startClusters(): Promise<{ child: ChildProcess; regions: string[] }[]> {
  return Promise.all(
    GROUPS.map(async (regions) => {
      const prof = PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROF_DIR}`] : [];
      const child = spawn(process.execPath, [...prof, '--import', 'tsx', new URL('./_kube-sim-child.ts', import.meta.url).pathname], {
        stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
        env: {
          ...cleanEnv(),
          BENCH_CONTROL_PLANE: url,
          BENCH_REGIONS: JSON.stringify(regions.map((region) => ({ region, token: tokens[region] }))),
          ...(LOG_DIR ? { BENCH_KRANE_LOG_LEVEL: 'info' } : {}),
        },
      });
      procs.push(child);
      names.set(child, `cluster child for ${regions.join(', ')}`);
      // Every line is read (an unread pipe would fill and block the child's logging). The
      // kranes' JSON log lines (kept with BENCH_LOG_DIR) come before and after the line of URLs
      // that says the child is up.
      const lines = createInterface(child.stdout!);
      const log = LOG_DIR ? createWriteStream(join(LOG_DIR, `krane-${regions.join('+')}.log`)) : undefined;
      await new Promise<void>((resolve, reject) => {
        lines.on('line', (l) => (l.startsWith('{') ? log?.write(l + '\n') : resolve()));
        child.once('exit', (code) => reject(new Error(`cluster child for ${regions.join(', ')} exited with ${code}`)));
      });
      return { child, regions };
    }),
  );
}

async function seedFleet(sql: ReturnType<typeof createDb>): Promise<number> {
  const tSeed = performance.now();
  await withTx(sql, async (tx) => {
    for (let i = 0; i < ENVIRONMENTS; i++) {
      const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
      await tenancy.insertEnvironment(tx, { ...scope, slug: `bench-${i}` });
      for (const region of REGIONS) {
        await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region, image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
        await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region });
      }
    }
  });
  for (;;) {
    const [r] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE health = 'healthy' AND running_image = 'sentinel:v1'`;
    if (r!.n === FLEET) break;
    assertAlive();
    await sleep(100);
  }
  return performance.now() - tSeed;
}

const pg = await startPostgres();
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const adminToken = 'bench-admin-token-rollout';
const tokens = Object.fromEntries(REGIONS.map((r) => [r, `bench-${r}-agent-token`]));
const ctrl = spawn(process.execPath, [...(CTRL_HEAP_MIB ? [`--max-old-space-size=${CTRL_HEAP_MIB}`] : []), ensureBundle(), 'ctrl'], {
  env: cleanEnv({
    UNKEY_INFRA_DATABASE_URL: pg.adminUrl,
    UNKEY_INFRA_ADMIN_TOKEN: adminToken,
    UNKEY_INFRA_AGENT_TOKENS: REGIONS.map((r) => `${r}=${tokens[r]}`).join(','),
    UNKEY_INFRA_LISTEN: `127.0.0.1:${port}`,
    UNKEY_INFRA_LOG_LEVEL: LOG_DIR ? 'info' : 'warn',
  }),
  stdio: ['ignore', LOG_DIR ? openSync(join(LOG_DIR, 'ctrl.log'), 'w') : 'inherit', 'inherit'],
});
procs.push(ctrl);
names.set(ctrl, 'ctrl');
const sql = createDb(pg.adminUrl, { max: 4 });
try {
  for (;;) {
    const ok = await fetch(`${url}/readyz`).then((r) => r.ok).catch(() => false);
    if (ok) break;
    // A ctrl that refused its configuration has said why on stderr; do not wait forever.
    assertAlive();
    await sleep(50);
  }
  const clusters = await startClusters();
  const fleetReadyMs = await seedFleet(sql);

  const xacts = async () => Number((await sql<{ n: string }[]>`SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n);
  const x0 = await xacts();
  const cpu0 = new Map(procs.map((p) => [p, cpuSeconds(p.pid!)]));
  const cpuMsPerSentinel = (p: ChildProcess) => Math.round(((cpuSeconds(p.pid!) - cpu0.get(p)!) * 1000 * 100) / FLEET) / 100;
  const t0 = performance.now();
  const start = (await api('/v1/sentinel-rollouts', { method: 'POST', body: JSON.stringify({ image: 'sentinel:v2' }) })) as { waves: number[] };
  let current: { state: string; succeeded?: number; failed?: number; skippedOffline?: number } = { state: '' };
  // ctrl's V8 heap in use, sampled from its /metrics: against the peak RSS it says how much of
  // the RSS is live data and how much is heap V8 has not handed back.
  let heapUsedPeak = 0;
  for (let i = 0; current.state !== 'completed' && current.state !== 'paused'; i++) {
    await sleep(100);
    assertAlive();
    current = (await api('/v1/sentinel-rollouts/current?limit=1')) as typeof current;
    if (i % 10 === 0) heapUsedPeak = Math.max(heapUsedPeak, await heapUsedMib());
  }
  const totalMs = performance.now() - t0;
  const ctrlCpuMsPerSentinel = cpuMsPerSentinel(ctrl);
  const clusterProcesses = clusters.map(({ child, regions }) => ({ regions, peakRssMib: peakRssMib(child.pid!), cpuMsPerSentinel: cpuMsPerSentinel(child) }));
  // Why sentinels failed, when some did: the first few, so a bad run says what went wrong.
  const failedSample = current.failed ? ((await api('/v1/sentinel-rollouts/current?list=failed&limit=3')) as { notes: unknown }).notes : undefined;
  // Includes the kranes' status reports and this loop's polls: the whole system's load per sentinel.
  const dbTransactions = (await xacts()) - x0;
  const web = args.web ? await measureWebRender({ url, token: adminToken, state: current.state, succeeded: current.succeeded ?? 0, fleet: FLEET }) : undefined;
  console.log(
    JSON.stringify({
      bench: 'rollout',
      sentinels: FLEET,
      waves: start.waves,
      readyDelayMs: 0,
      clusters: args.clusters,
      state: current.state,
      succeeded: current.succeeded ?? 0,
      failed: current.failed ?? 0,
      skippedOffline: current.skippedOffline ?? 0,
      totalMs: Math.round(totalMs),
      ctrlCpuMsPerSentinel,
      dbTransactionsPerSentinel: Math.round((dbTransactions * 100) / FLEET) / 100,
      fleetSeedToHealthyMs: Math.round(fleetReadyMs),
      ctrlPeakRssMib: peakRssMib(ctrl.pid!),
      ctrlPeakHeapUsedMib: heapUsedPeak,
      clusterProcesses,
      benchPeakRssMib: Math.round(process.resourceUsage().maxRSS / 1024),
      ...(web ?? {}),
      ...(failedSample ? { failedSample } : {}),
      ...(CTRL_HEAP_MIB ? { ctrlHeapMib: CTRL_HEAP_MIB } : {}),
      target: { totalMs: FLEET > 1000 ? 120_000 : 30_000, ...(FLEET > 1000 ? { ctrlPeakRssMib: 512 } : {}), ...(web ? { webRenderMs: 1000 } : {}) },
    }),
  );
} finally {
  await sql.end().catch(() => {});
  // Clusters first: a krane whose control plane vanished would only retry against it.
  for (const p of [...procs].reverse()) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    const kill = setTimeout(() => p.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(kill);
  }
  await pg.stop();
}
