// The shapes bench:engine measures, the same for this engine and for each peer (issue 3's
// Restate and DBOS measurements): a 10-step invocation's latency and the per-step cost ((10-step
// p50 - 0-step p50) / 10); awakeable resolve -> handler resumed, from outside (an HTTP request)
// and from another invocation; 10-step invocations a second from 50 concurrent callers on
// distinct keys and on one key. Side by side, the subjects take turns within each shape, in
// rounds, the order rotating each round: on a shared machine both sides then meet the same
// load (not equally, but not one side the quiet minute and the other the busy one).
import { performance } from 'node:perf_hooks';

export interface Subject {
  name: string;
  ten(): Promise<unknown>;
  zero(): Promise<unknown>;
  /** A 10-step exclusive handler of a keyed object (one at a time per key). */
  keyedTen(key: string): Promise<unknown>;
  /** Starts a waiter, resolves its awakeable over HTTP once it waits; ms resolve -> resumed. */
  awakeableFromHttp?(tag: string): Promise<number>;
  /** The same, resolved by another invocation; ms from the resolving step to resumed. */
  awakeableFromInvocation?(tag: string): Promise<number>;
  /** Keyed work on one key (false: the peer has no such thing to compare). */
  oneKey: boolean;
  stop(): Promise<void>;
}

export interface ShapeOptions {
  warmup: number;
  latencyRuns: number;
  awakeableRuns: number;
  throughputMs: number;
  concurrency: number;
  rounds: number;
}

export interface Latency {
  p50Ms: number;
  p99Ms: number;
  runs: number;
}

export interface ShapeResult {
  tenStep: Latency;
  zeroStep: Latency;
  perStepMs: number;
  awakeableResume: { fromHttp: Latency | null; fromInvocation: Latency | null };
  throughputTenStepPerSec: { concurrency: number; distinctKeys: number; oneKey: number | null };
  /** The longest time in the throughput windows with no call completing, and the longest
   *  single call: a stall (a key held idle until its lease lapsed was 30 s) shows here
   *  directly, not only as a lower rate. On distinct keys the other callers go on completing,
   *  so only the longest call sees one key's stall. */
  longestGapMs: { distinctKeys: number; oneKey: number | null };
  longestCallMs: { distinctKeys: number; oneKey: number | null };
}

export const pct = (xs: readonly number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(2));
};

const latencyOf = (xs: number[]): Latency => ({ p50Ms: pct(xs, 50), p99Ms: pct(xs, 99), runs: xs.length });

async function timed(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

interface Window {
  completed: number;
  seconds: number;
  longestGapMs: number;
  longestCallMs: number;
}

/** Completed calls a second from `concurrency` callers, each calling in a loop for `ms`, the
 *  longest wait for the next completion and the longest call. */
async function throughput(concurrency: number, ms: number, call: (worker: number, n: number) => Promise<unknown>): Promise<Window> {
  let completed = 0;
  const t0 = performance.now();
  const deadline = t0 + ms;
  let last = t0;
  let longestGapMs = 0;
  let longestCallMs = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let n = 0; performance.now() < deadline; n++) {
        const started = performance.now();
        await call(w, n);
        completed++;
        const t = performance.now();
        longestGapMs = Math.max(longestGapMs, t - last);
        longestCallMs = Math.max(longestCallMs, t - started);
        last = t;
      }
    }),
  );
  return { completed, seconds: (performance.now() - t0) / 1000, longestGapMs, longestCallMs };
}

/** Adds a window to the rounds' sums (the longest figures: their maximum). */
function add(into: Window, t: Window): void {
  into.completed += t.completed;
  into.seconds += t.seconds;
  into.longestGapMs = Math.max(into.longestGapMs, t.longestGapMs);
  into.longestCallMs = Math.max(into.longestCallMs, t.longestCallMs);
}

/** A statement timed beside the latency shapes, in the same rounds (bench:engine's one-row
 *  commit, which the per-step cost is compared with): taken once at the end, it met another
 *  minute's load, and the ratio moved with it (0.21-0.31 ms across three runs of one tree). */
export interface Probe {
  run(): Promise<unknown>;
  samples: number[];
}

/** Runs every shape for every subject, the subjects taking turns in rounds. */
export async function measure(subjects: readonly Subject[], o: ShapeOptions, probe?: Probe): Promise<Map<string, ShapeResult>> {
  const names = subjects.map((s) => s.name);
  const samples = new Map(names.map((n) => [n, { ten: [] as number[], zero: [] as number[], http: [] as number[], inv: [] as number[] }]));
  const empty = (): Window => ({ completed: 0, seconds: 0, longestGapMs: 0, longestCallMs: 0 });
  const counts = new Map(names.map((n) => [n, { distinct: empty(), one: empty() }]));
  for (const s of subjects) {
    await timed(o.warmup, () => s.ten());
    await timed(o.warmup, () => s.zero());
    await throughput(o.concurrency, 500, (w) => s.keyedTen(`warm-${w}`));
  }
  const per = (total: number) => Math.max(1, Math.ceil(total / o.rounds));
  let tag = 0;
  for (let r = 0; r < o.rounds; r++) {
    const order = subjects.map((_, i) => subjects[(i + r) % subjects.length]!);
    for (const s of order) samples.get(s.name)!.ten.push(...(await timed(per(o.latencyRuns), () => s.ten())));
    for (const s of order) samples.get(s.name)!.zero.push(...(await timed(per(o.latencyRuns), () => s.zero())));
    if (probe) probe.samples.push(...(await timed(per(o.latencyRuns), probe.run)));
    for (const s of order) {
      const into = samples.get(s.name)!;
      for (let i = 0; s.awakeableFromHttp && i < per(o.awakeableRuns); i++) into.http.push(await s.awakeableFromHttp(`h${tag++}`));
      for (let i = 0; s.awakeableFromInvocation && i < per(o.awakeableRuns); i++) into.inv.push(await s.awakeableFromInvocation(`i${tag++}`));
    }
    for (const s of order) {
      add(counts.get(s.name)!.distinct, await throughput(o.concurrency, o.throughputMs / o.rounds, (w) => s.keyedTen(`w${w}`)));
    }
    for (const s of order) {
      if (!s.oneKey) continue;
      add(counts.get(s.name)!.one, await throughput(o.concurrency, o.throughputMs / o.rounds, () => s.keyedTen(`one-${r}`)));
    }
  }
  const out = new Map<string, ShapeResult>();
  for (const s of subjects) {
    const x = samples.get(s.name)!;
    const c = counts.get(s.name)!;
    const rate = (t: { completed: number; seconds: number }) => Number((t.completed / t.seconds).toFixed(1));
    out.set(s.name, {
      tenStep: latencyOf(x.ten),
      zeroStep: latencyOf(x.zero),
      perStepMs: Number(((pct(x.ten, 50) - pct(x.zero, 50)) / 10).toFixed(3)),
      awakeableResume: { fromHttp: x.http.length ? latencyOf(x.http) : null, fromInvocation: x.inv.length ? latencyOf(x.inv) : null },
      throughputTenStepPerSec: { concurrency: o.concurrency, distinctKeys: rate(c.distinct), oneKey: s.oneKey ? rate(c.one) : null },
      longestGapMs: { distinctKeys: Math.round(c.distinct.longestGapMs), oneKey: s.oneKey ? Math.round(c.one.longestGapMs) : null },
      longestCallMs: { distinctKeys: Math.round(c.distinct.longestCallMs), oneKey: s.oneKey ? Math.round(c.one.longestCallMs) : null },
    });
  }
  return out;
}

/** How many times better `ours` is than `peer`, per shape (above 1: ours is better). */
export function ratios(ours: ShapeResult, peer: ShapeResult): Record<string, number | null> {
  const r = (x: number | null | undefined, y: number | null | undefined) => (x && y ? Number((x / y).toFixed(2)) : null);
  return {
    tenStepP50: r(peer.tenStep.p50Ms, ours.tenStep.p50Ms),
    perStep: r(peer.perStepMs, ours.perStepMs),
    distinctKeysPerSec: r(ours.throughputTenStepPerSec.distinctKeys, peer.throughputTenStepPerSec.distinctKeys),
    oneKeyPerSec: r(ours.throughputTenStepPerSec.oneKey, peer.throughputTenStepPerSec.oneKey),
    awakeableFromHttpP50: r(peer.awakeableResume.fromHttp?.p50Ms, ours.awakeableResume.fromHttp?.p50Ms),
    awakeableFromInvocationP50: r(peer.awakeableResume.fromInvocation?.p50Ms, ours.awakeableResume.fromInvocation?.p50Ms),
  };
}
