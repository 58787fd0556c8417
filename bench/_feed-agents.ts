// Child process of bench/feed.ts: runs N krane watchers against one ctrl, so the agents' JSON
// parsing does not share ctrl's event loop. Agent i of this child (the fleet's agent offset + i)
// watches regions[(offset + i) % regions.length]; bench:feed splits the fleet over --agent-processes.
// Reports over IPC: `ready` once every watcher completed its first snapshot (with how long that
// took), `count` (deliveries recorded so far, for the bench's drain; counted from `warm` or
// `record`, whichever came first, while the CPU, counters and profile start at `record`), and on request the
// wall-clock time each watcher's handler first saw each deployment id (a second apply of the
// same id by the same agent counts as a duplicate, not a delivery), with the stream failures,
// deferred polls, handovers and changes applied from handed-over polls since recording began
// and why the failures happened.
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Watcher } from '../src/sync/watcher';
import type { ResourceController } from '../src/sync/wire';
import { startProfile } from './_profile';

// The config comes over IPC: 10,000 regions' tokens are too long for a command line (E2BIG).
const cfg = await new Promise<{ url: string; regions: { region: string; token: string }[]; agents: number; offset?: number; waitSeconds?: number; profileDir?: string; handover?: boolean }>((resolve) =>
  process.once('message', (m: { type: string; config: never }) => resolve(m.config)),
);
const now = () => performance.timeOrigin + performance.now();
const seen = new Map<string, number[]>();
let recording = false;
let deliveries = 0;
let duplicates = 0;
let cpu0 = process.cpuUsage();

/** Agent i's controller: records the first apply of each id only. */
function controllerFor(): ResourceController {
  const mine = new Set<string>();
  return {
    async apply(ref) {
      if (!recording) return;
      const t = now();
      if (mine.has(ref.id)) {
        duplicates++;
        return;
      }
      mine.add(ref.id);
      let a = seen.get(ref.id);
      if (!a) seen.set(ref.id, (a = []));
      a.push(t);
      deliveries++;
    },
    async delete() {},
    async gc() {},
  };
}

// Warnings are the watchers' failures: counted by message and cause, so a run with stream
// failures says what they were.
const reasons = new Map<string, number>();
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    if (recording) {
      for (const l of chunk.toString().split('\n')) {
        if (!l) continue;
        const j = JSON.parse(l) as { msg?: string; err?: { message?: string } };
        const k = `${j.msg}: ${(j.err?.message ?? '').slice(0, 80)}`;
        reasons.set(k, (reasons.get(k) ?? 0) + 1);
      }
    }
    done();
  },
});
const logger = pino({ level: 'warn' }, sink);
const watchers = Array.from({ length: cfg.agents }, (_, i) => {
  const { region, token } = cfg.regions[((cfg.offset ?? 0) + i) % cfg.regions.length]!;
  return new Watcher({ controlPlaneUrl: cfg.url, token, region, controller: controllerFor(), logger, waitSeconds: cfg.waitSeconds, backoffMinMs: 200, backoffMaxMs: 500, concurrency: 16, handover: cfg.handover ?? true });
});
const sum = (f: (w: Watcher) => number) => watchers.reduce((s, w) => s + f(w), 0);
const t0 = now();
const done: number[] = [];
for (const w of watchers) w.start();
const tick = setInterval(() => {
  for (let i = 0; i < watchers.length; i++) if (done[i] === undefined && watchers[i]!.stats.snapshotsCompleted > 0) done[i] = now() - t0;
  if (done.filter((x) => x !== undefined).length === watchers.length) {
    clearInterval(tick);
    process.send!({ type: 'ready', snapshotMs: Math.max(...done), failures: sum((w) => w.stats.failures) });
  }
}, 5);

let base = { failures: 0, deferred: 0, handovers: 0, drainedEvents: 0 };
let profiler: Awaited<ReturnType<typeof startProfile>> | null = null;
process.on('message', async (m: { type: string }) => {
  if (m.type === 'warm') {
    // The warm-up's deliveries are recorded (the bench reports them apart); nothing else starts.
    recording = true;
    process.send!({ type: 'warming' });
  } else if (m.type === 'record') {
    if (cfg.profileDir && !profiler) profiler = await startProfile();
    recording = true;
    cpu0 = process.cpuUsage();
    base = { failures: sum((w) => w.stats.failures), deferred: sum((w) => w.stats.deferred), handovers: sum((w) => w.stats.handovers), drainedEvents: sum((w) => w.stats.drainedEvents) };
    duplicates = 0;
    reasons.clear();
    process.send!({ type: 'recording' });
  } else if (m.type === 'count') {
    process.send!({ type: 'count', deliveries });
  } else if (m.type === 'report') {
    const cpu = process.cpuUsage(cpu0);
    await profiler?.stop(join(cfg.profileDir!, `agents-${cfg.agents}-from-${cfg.offset ?? 0}.cpuprofile`));
    profiler = null;
    process.send!({
      type: 'report',
      seen: Object.fromEntries(seen),
      failures: sum((w) => w.stats.failures) - base.failures,
      deferred: sum((w) => w.stats.deferred) - base.deferred,
      handovers: sum((w) => w.stats.handovers) - base.handovers,
      drainedEvents: sum((w) => w.stats.drainedEvents) - base.drainedEvents,
      duplicates,
      failureReasons: Object.fromEntries(reasons),
      cpuMs: (cpu.user + cpu.system) / 1000,
    });
  } else if (m.type === 'stop') {
    await Promise.all(watchers.map((w) => w.stop()));
    process.exit(0);
  }
});
