// Child process of bench/feed.ts: runs N krane watchers against one ctrl, so the agents' JSON
// parsing does not share ctrl's event loop. Reports over IPC: `ready` once every watcher
// completed its first snapshot (with how long that took), and on request the wall-clock time
// each watcher's handler saw each deployment id.
import { createLogger } from '../src/log';
import { Watcher } from '../src/sync/watcher';
import type { ResourceController } from '../src/sync/wire';

const cfg = JSON.parse(process.argv[2]!) as { url: string; token: string; region: string; agents: number; waitSeconds: number };
const now = () => performance.timeOrigin + performance.now();
const seen = new Map<string, number[]>();
let recording = false;
let cpu0 = process.cpuUsage();

const controller: ResourceController = {
  async apply(ref) {
    if (!recording) return;
    const t = now();
    let a = seen.get(ref.id);
    if (!a) seen.set(ref.id, (a = []));
    a.push(t);
  },
  async delete() {},
  async gc() {},
};

const logger = createLogger('silent');
const watchers = Array.from(
  { length: cfg.agents },
  () =>
    new Watcher({
      controlPlaneUrl: cfg.url,
      token: cfg.token,
      region: cfg.region,
      controller,
      logger,
      waitSeconds: cfg.waitSeconds,
      backoffMinMs: 200,
      backoffMaxMs: 500,
      concurrency: 16,
    }),
);
const t0 = now();
const done: number[] = [];
for (const w of watchers) w.start();
const tick = setInterval(() => {
  for (let i = 0; i < watchers.length; i++) if (done[i] === undefined && watchers[i]!.stats.snapshotsCompleted > 0) done[i] = now() - t0;
  if (done.filter((x) => x !== undefined).length === watchers.length) {
    clearInterval(tick);
    process.send!({ type: 'ready', snapshotMs: Math.max(...done), failures: watchers.reduce((s, w) => s + w.stats.failures, 0) });
  }
}, 5);

process.on('message', async (m: { type: string }) => {
  if (m.type === 'record') {
    recording = true;
    cpu0 = process.cpuUsage();
    process.send!({ type: 'recording' });
  } else if (m.type === 'report') {
    const cpu = process.cpuUsage(cpu0);
    process.send!({ type: 'report', seen: Object.fromEntries(seen), failures: watchers.reduce((s, w) => s + w.stats.failures, 0), deferred: watchers.reduce((s, w) => s + w.stats.deferred, 0), cpuMs: (cpu.user + cpu.system) / 1000 });
  } else if (m.type === 'stop') {
    await Promise.all(watchers.map((w) => w.stop()));
    process.exit(0);
  }
});
