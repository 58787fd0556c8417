// Child process for the benchmarks: runs simulated clusters on their own core, so their pod
// controllers (and, for bench:rollout, their kranes) neither compete with the code being
// measured nor get starved by it. Two modes:
// - bench:kube, bench:drift: one bare simulator (ready delay READY_DELAY_MS, default 200).
// - bench:rollout: BENCH_REGIONS (JSON [{ region, token }]) and BENCH_CONTROL_PLANE set: one
//   simulator (ready delay 0, pods ready at once) and one krane against it per region, each
//   krane pulling from that control plane as a region's agent does.
// Prints its simulators' URLs (space-separated) on the first stdout line once everything runs.
// Exits when the parent's IPC channel closes (bench:rollout spawns it with one), so a parent
// that died without killing it does not leave a cluster and a krane running.
import { DEFAULT_SIM_OPTIONS, KubeSim } from '../src/kube-sim';
import { loadConfig } from '../src/config';
import { startKubeSim } from '../src/modes/kube-sim';
import { startKrane } from '../src/modes/krane';

const closers: (() => Promise<unknown>)[] = [];
const urls: string[] = [];
const regions = process.env.BENCH_REGIONS ? (JSON.parse(process.env.BENCH_REGIONS) as { region: string; token: string }[]) : undefined;

if (regions) {
  const controlPlane = process.env.BENCH_CONTROL_PLANE;
  if (!controlPlane) throw new Error('BENCH_REGIONS needs BENCH_CONTROL_PLANE');
  for (const { region, token } of regions) {
    const sim = await startKubeSim(loadConfig('kubeSim', { port: 0, readyDelay: 0, logLevel: 'silent' }, {}), { minReadyScale: 0 });
    const krane = await startKrane(loadConfig('krane', { region, controlPlane, token, listen: '127.0.0.1:0', logLevel: 'silent' }, {}), {
      kubeConfig: sim.sim.kubeConfig(),
    });
    closers.push(() => krane.close(), () => sim.close());
    urls.push(sim.url);
  }
} else {
  const sim = new KubeSim({
    readyDelayMs: Number(process.env.READY_DELAY_MS ?? 200),
    namespaces: [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'],
  });
  urls.push(await sim.listen(0));
  closers.push(() => sim.close());
}
console.log(urls.join(' '));

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
