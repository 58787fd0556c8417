// The chaos schedule: pure, seed in, schedule out. The same seed gives the same faults at the
// same offsets, so a violation found by a long run is replayed with `--seed S --schedules 1`.
// Faults never overlap on one target (a ctrl replica is not killed twice at once), and at most
// one ctrl replica is down at any time, because the invariants are about riding out faults,
// not about surviving the loss of every replica.

/** Faults every schedule draws from (the list and its order fix what a seed means). */
export const BASE_FAULT_KINDS = [
  'ctrl-kill',
  'krane-kill',
  'pg-restart',
  'pg-terminate',
  'krane-ctrl-cut',
  'krane-ctrl-cut-mid',
  'krane-ctrl-delay',
  'krane-ctrl-blackhole',
  'ctrl-pg-cut',
  'ctrl-pg-delay',
  'ctrl-pg-blackhole',
  'sim-error',
  'sim-throttle',
  'sim-slow',
] as const;
/**
 * On a Patroni cluster (`bench:chaos -- --ha`, issue 35) schedules also draw these: the primary
 * killed (Patroni promotes the synchronous standby; the killed node rejoins after the fault's
 * duration) and a planned switchover. Drawn only then, so a seed of the plain run keeps its
 * schedule.
 */
export const HA_FAULT_KINDS = ['pg-failover', 'pg-switchover'] as const;
export const FAULT_KINDS = [...BASE_FAULT_KINDS, ...HA_FAULT_KINDS] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  /** Offset from the schedule's start. */
  atMs: number;
  kind: FaultKind;
  /** ctrl replica index, region index, or -1 for the one PostgreSQL server. */
  target: number;
  /** How long the fault lasts before it heals by itself (0: instantaneous). */
  durationMs: number;
  /** Latency for delay/slow faults, share of requests for sim faults. */
  latencyMs?: number;
  ratio?: number;
}

export interface ScheduleOptions {
  durationMs: number;
  ctrlReplicas: number;
  regions: number;
  /** Mean gap between fault starts. */
  meanGapMs: number;
  /** The database is a Patroni cluster: HA_FAULT_KINDS are drawn too. */
  ha?: boolean;
}

/** mulberry32: tiny, fast, good enough for picking faults, and identical on every platform. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Seed of the i-th schedule of a run: `--seed <it> --schedules 1` replays that schedule alone. */
export const scheduleSeed = (seed: number, i: number) => (seed + i) >>> 0;

// Fault lengths: long enough to break streams and in-flight steps, short enough that a run of
// 100 schedules stays in minutes. PostgreSQL restarts and kills heal by restarting.
const MIN_FAULT_MS = 500;
const MAX_FAULT_MS = 4_000;

const targetKind = (kind: FaultKind): 'ctrl' | 'region' | 'pg' =>
  kind.startsWith('ctrl-') ? 'ctrl' : kind.startsWith('pg-') ? 'pg' : 'region';

/** Faults whose target is one ctrl replica's link or process, i.e. that take a replica out. */
const TAKES_CTRL_OUT = new Set<FaultKind>(['ctrl-kill', 'ctrl-pg-blackhole', 'ctrl-pg-cut']);
/**
 * A failover or switchover keeps the database busy past its own duration: the new primary
 * takes over (Patroni's leader TTL, 10 s in the harness) and the old one rejoins as a standby
 * (pg_rewind, a restart). No other database fault starts in that window; the fault's own code
 * waits for the cluster to be whole again before it ends.
 */
const HA_SETTLE_MS = 25_000;

export function generateSchedule(seed: number, o: ScheduleOptions): Fault[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const busyUntil = new Map<string, number>();
  let ctrlOutUntil = 0;
  const out: Fault[] = [];
  // Faults start in the first 70% so the last of them has healed before the workload ends.
  const lastStart = o.durationMs * 0.7;
  const kinds: readonly FaultKind[] = o.ha ? FAULT_KINDS : BASE_FAULT_KINDS;
  for (let t = Math.floor(rand() * o.meanGapMs); t < lastStart; t += Math.floor(o.meanGapMs * (0.5 + rand()))) {
    const kind = pick(kinds);
    const tk = targetKind(kind);
    const target = tk === 'pg' ? -1 : Math.floor(rand() * (tk === 'ctrl' ? o.ctrlReplicas : o.regions));
    const durationMs = kind === 'pg-terminate' || kind === 'krane-ctrl-cut' || kind === 'krane-ctrl-cut-mid' || kind === 'ctrl-pg-cut' || kind === 'pg-switchover' ? 0 : MIN_FAULT_MS + Math.floor(rand() * (MAX_FAULT_MS - MIN_FAULT_MS));
    const key = `${tk}:${target}`;
    if ((busyUntil.get(key) ?? -1) >= t) continue;
    if (TAKES_CTRL_OUT.has(kind) && ctrlOutUntil >= t) continue;
    const f: Fault = { atMs: t, kind, target, durationMs };
    if (kind.endsWith('-delay') || kind === 'sim-slow') f.latencyMs = 50 + Math.floor(rand() * 450);
    if (kind === 'sim-error' || kind === 'sim-throttle') f.ratio = Math.round((0.3 + rand() * 0.7) * 100) / 100;
    out.push(f);
    busyUntil.set(key, t + durationMs + ((HA_FAULT_KINDS as readonly string[]).includes(kind) ? HA_SETTLE_MS : 0));
    if (TAKES_CTRL_OUT.has(kind)) ctrlOutUntil = t + Math.max(durationMs, 1_000);
  }
  return out;
}

/** Counts by kind, every kind present (zeros included) so reports compare across runs. */
export function countByKind(faults: readonly Fault[]): Record<FaultKind, number> {
  const counts = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  for (const f of faults) counts[f.kind]++;
  return counts;
}
