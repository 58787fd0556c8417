// Child process for the benchmarks: runs simulated clusters on their own core, so their pod
// controllers (and, for bench:rollout, their kranes) neither compete with the code being
// measured nor get starved by it. Two modes:
// - bench:kube, bench:drift: one bare simulator (ready delay READY_DELAY_MS, default 200).
// - bench:rollout: BENCH_REGIONS (JSON [{ region, token }]) and BENCH_CONTROL_PLANE set: one
//   simulator (ready delay 0, pods ready at once) and one krane against it per region, each
//   krane pulling from that control plane as a region's agent does.
// Prints its simulators' URLs (space-separated) on one stdout line once everything runs; the
// kranes log JSON lines on stdout too, before and after it, at BENCH_KRANE_LOG_LEVEL (default
// silent).
// Exits when the parent's IPC channel closes (bench:rollout spawns it with one), so a parent
// that died without killing it does not leave a cluster and a krane running.
import { DEFAULT_SIM_OPTIONS, KubeSim } from '../src/kube-sim';
import { loadConfig } from '../src/config';
import { startKubeSim } from '../src/modes/kube-sim';
import { startKrane, type KraneHandle } from '../src/modes/krane';
import { KraneSupervisor } from '../src/modes/supervisor';
import { createLogger, type LogLevel } from '../src/log';

const closers: (() => Promise<unknown>)[] = [];
const urls: string[] = [];
const regions = process.env.BENCH_REGIONS ? (JSON.parse(process.env.BENCH_REGIONS) as { region: string; token: string }[]) : undefined;

if (regions) {
  const controlPlane = process.env.BENCH_CONTROL_PLANE;
  if (!controlPlane) throw new Error('BENCH_REGIONS needs BENCH_CONTROL_PLANE');
  const logLevel = (process.env.BENCH_KRANE_LOG_LEVEL ?? 'silent') as LogLevel;
  const sims = new Map<string, Awaited<ReturnType<typeof startKubeSim>>>();
  // A krane that lost its Lease shuts down; in a cluster its pod restarts, here the supervisor
  // the embedded stack uses starts it again (said on stderr: a stalled child shows as this).
  const supervisor = new KraneSupervisor({
    logger: createLogger(logLevel),
    start: (region, onLostLease) => {
      const { token } = regions.find((r) => r.region === region)!;
      const cfg = loadConfig('krane', { region, controlPlane, token, listen: '127.0.0.1:0', logLevel }, {});
      return startKrane(cfg, { kubeConfig: sims.get(region)!.sim.kubeConfig(), onLostLease: () => {
        process.stderr.write(`[cluster child] krane of ${region} lost its Lease: restarted\n`);
        onLostLease();
      } });
    },
    replaced: (region, krane) => void kranes.set(region, krane),
  });
  const kranes = new Map<string, KraneHandle>();
  for (const { region } of regions) {
    const sim = await startKubeSim(loadConfig('kubeSim', { port: 0, readyDelay: 0, logLevel: 'silent' }, {}), { minReadyScale: 0 });
    sims.set(region, sim);
    kranes.set(region, await supervisor.start(region));
    closers.push(() => kranes.get(region)!.close(), () => sim.close());
    urls.push(sim.url);
  }
  // Closed first (closers run last to first): no restart during shutdown.
  closers.push(() => supervisor.close());
} else {
  const sim = new KubeSim({
    readyDelayMs: Number(process.env.READY_DELAY_MS ?? 200),
    namespaces: [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'],
  });
  urls.push(await sim.listen(0));
  closers.push(() => sim.close());
}
console.log(urls.join(' '));

// A stalled event loop starves the krane's Lease renewals (7 s deadline) and heartbeats: say
// so on stderr, with how long, so a run where a region went quiet shows whether this was why.
const STALL_REPORT_MS = 1_000;
let lastTick = performance.now();
setInterval(() => {
  const late = performance.now() - lastTick - 250;
  if (late > STALL_REPORT_MS) process.stderr.write(`[cluster child ${regions?.map((r) => r.region).join('+') ?? 'sim'}] event loop stalled ${Math.round(late)} ms\n`);
  lastTick = performance.now();
}, 250).unref();

let closing = false;
const shutdown = () => {
  if (closing) return;
  closing = true;
  // A krane closing against a control plane already gone could wait on its retries; the
  // parent is done with us either way, so a stuck close must not keep the process alive.
  setTimeout(() => process.exit(0), 5000).unref();
  void (async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    process.exit(0);
  })();
};
process.on('SIGTERM', shutdown);
process.on('disconnect', shutdown);
