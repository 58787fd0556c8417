// `npm run bench:rollout [-- --sentinels 10000]`: a fleet rollout of 1,000 sentinels by default
// (half as many environments × 2 regions) with the simulators' ready delay 0: total time from
// start to `completed`, ctrl's peak memory and CPU, and the database's transactions per
// sentinel. ctrl runs as its own process (the built bundle) so its peak RSS (VmHWM) and CPU are
// its own; the two simulated clusters and their kranes run in this process. Targets: 1,000 in
// under 30 s; 10,000 in under 120 s with ctrl's peak RSS under 512 MiB (issue 28).
// Prints one JSON object on the last stdout line.
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startPostgres, freePort } from '../tests/helpers/postgres';
import { cleanEnv, ensureBundle } from '../tests/helpers/bundle';
import { loadConfig } from '../src/config';
import { startKubeSim } from '../src/modes/kube-sim';
import { startKrane } from '../src/modes/krane';
import { createDb, cilium, sentinels, tenancy, withTx } from '../src/store';
import { newId } from '../src/ids';
import { parseArgs } from 'node:util';

const args = parseArgs({ options: { sentinels: { type: 'string', default: '1000' } } }).values;
const REGIONS = ['us-east-1', 'eu-west-1'];
/** The fleet: environments × 2 regions, one sentinel in each. */
const ENVIRONMENTS = Math.ceil(Number(args.sentinels) / REGIONS.length);
const FLEET = ENVIRONMENTS * REGIONS.length;
if (!Number.isInteger(ENVIRONMENTS) || ENVIRONMENTS < 1) throw new Error(`--sentinels must be a positive integer (got ${args.sentinels})`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** ctrl's user + system CPU so far, in seconds (clock ticks of /proc/PID/stat, 100 per second on Linux). */
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const peakRssMib = (pid: number) => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : null;
};

const pg = await startPostgres();
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const adminToken = 'bench-admin-token-rollout';
const tokens = Object.fromEntries(REGIONS.map((r) => [r, `bench-${r}-agent-token`]));
const ctrl = spawn(process.execPath, [ensureBundle(), 'ctrl'], {
  env: cleanEnv({
    UNKEY_INFRA_DATABASE_URL: pg.adminUrl,
    UNKEY_INFRA_ADMIN_TOKEN: adminToken,
    UNKEY_INFRA_AGENT_TOKENS: REGIONS.map((r) => `${r}=${tokens[r]}`).join(','),
    UNKEY_INFRA_LISTEN: `127.0.0.1:${port}`,
    UNKEY_INFRA_LOG_LEVEL: 'warn',
  }),
  stdio: ['ignore', 'inherit', 'inherit'],
});
const closers: (() => Promise<unknown>)[] = [];
try {
  for (;;) {
    const ok = await fetch(`${url}/readyz`).then((r) => r.ok).catch(() => false);
    if (ok) break;
    // A ctrl that refused its configuration has said why on stderr; do not wait forever.
    if (ctrl.exitCode !== null) throw new Error(`ctrl exited with code ${ctrl.exitCode} before it was ready`);
    await sleep(50);
  }
  for (const region of REGIONS) {
    const sim = await startKubeSim(loadConfig('kubeSim', { port: 0, readyDelay: 0, logLevel: 'silent' }, {}), { minReadyScale: 0 });
    const krane = await startKrane(loadConfig('krane', { region, controlPlane: url, token: tokens[region], listen: '127.0.0.1:0', logLevel: 'silent' }, {}), {
      kubeConfig: sim.sim.kubeConfig(),
    });
    closers.push(() => krane.close(), () => sim.close());
  }
  const sql = createDb(pg.adminUrl, { max: 4 });
  closers.push(() => sql.end());
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
    await sleep(100);
  }
  const fleetReadyMs = performance.now() - tSeed;

  const xacts = async () => Number((await sql<{ n: string }[]>`SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n);
  const x0 = await xacts();
  const cpu0 = cpuSeconds(ctrl.pid!);
  const t0 = performance.now();
  const start = await fetch(`${url}/v1/sentinel-rollouts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ image: 'sentinel:v2' }),
  }).then((r) => r.json() as Promise<{ waves: number[] }>);
  let state = '';
  let current: { state: string; succeeded?: number; failed?: number } = { state: '' };
  while (state !== 'completed' && state !== 'paused') {
    await sleep(100);
    current = (await fetch(`${url}/v1/sentinel-rollouts/current?limit=1`, { headers: { authorization: `Bearer ${adminToken}` } }).then((r) => r.json())) as typeof current;
    state = current.state;
  }
  const totalMs = performance.now() - t0;
  const ctrlCpuS = cpuSeconds(ctrl.pid!) - cpu0;
  // Why sentinels failed, when some did: the first few, so a bad run says what went wrong.
  const failedSample = current.failed
    ? ((await fetch(`${url}/v1/sentinel-rollouts/current?list=failed&limit=3`, { headers: { authorization: `Bearer ${adminToken}` } }).then((r) => r.json())) as { notes: unknown }).notes
    : undefined;
  // Includes the kranes' status reports and this loop's polls: the whole system's load per sentinel.
  const dbTransactions = (await xacts()) - x0;
  console.log(
    JSON.stringify({
      bench: 'rollout',
      sentinels: FLEET,
      waves: start.waves,
      readyDelayMs: 0,
      state,
      succeeded: current.succeeded ?? 0,
      failed: current.failed ?? 0,
      totalMs: Math.round(totalMs),
      ctrlCpuMsPerSentinel: Math.round((ctrlCpuS * 1000 * 100) / FLEET) / 100,
      dbTransactionsPerSentinel: Math.round((dbTransactions * 100) / FLEET) / 100,
      fleetSeedToHealthyMs: Math.round(fleetReadyMs),
      ctrlPeakRssMib: peakRssMib(ctrl.pid!),
      ...(failedSample ? { failedSample } : {}),
      target: FLEET > 1000 ? { totalMs: 120_000, ctrlPeakRssMib: 512 } : { totalMs: 30_000 },
    }),
  );
} finally {
  for (const c of closers.reverse()) await c().catch(() => {});
  ctrl.kill('SIGTERM');
  await new Promise((r) => ctrl.once('exit', r));
  await pg.stop();
}
