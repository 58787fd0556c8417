// Runs N chaos schedules one after another (each on a fresh cluster sharing one PostgreSQL
// server) and aggregates them into the report bench:chaos prints last.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBundle } from '../../tests/helpers/bundle';
import { KEEP_DB, runDir, startCluster, startServer } from './cluster';
import type { Violation } from './invariants';
import { percentile, runSchedule, type ScheduleResult } from './run';
import { countByKind, FAULT_KINDS, scheduleSeed, type FaultKind } from './schedule';

export interface ChaosOptions {
  seed: number;
  schedules: number;
  durationMs: number;
  /** How long after healing workflows and waiting calls get to finish (default SETTLE_WITHIN_MS). */
  settleMs?: number;
  /** Progress lines on stderr (the JSON report alone goes to stdout). */
  log?: (line: string) => void;
  /** The database is a Patroni cluster, and pg-failover and pg-switchover are drawn (issue 35). */
  ha?: boolean;
}

export interface ChaosReport {
  bench: 'chaos';
  /** The database: one PostgreSQL, or a Patroni cluster (--ha). */
  database: 'single' | 'patroni';
  seed: number;
  schedules: number;
  durationMs: number;
  faultsByKind: Record<FaultKind, number>;
  faultErrors: string[];
  violations: (Violation & { schedule: number; scheduleSeed: number })[];
  violationsByKind: Record<string, number>;
  convergenceAfterHealMs: { p50?: number; p99?: number; max?: number };
  calls: Record<string, number>;
  /** 5xx answers to calls that do not wait on a workflow (at most 20 shown). */
  serverErrors: ScheduleResult['serverErrors'];
  /** Deployments by final status and resources wanted, summed over schedules: the workload did work. */
  outcome: ScheduleResult['outcome'];
  /** Where the logs of schedules with violations were kept. */
  logs?: string;
}

/** Enough to see the kinds of 5xx answers without drowning the report in a long run. */
const SHOWN_SERVER_ERRORS = 20;

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const log = o.log ?? (() => {});
  // Rebuilt when older than the sources: a stale bundle was once measured silently.
  const bundle = ensureBundle();
  const dir = runDir();
  const pg = await startServer(dir, o.ha);
  const results: ScheduleResult[] = [];
  let keep = false;
  try {
    for (let i = 0; i < o.schedules; i++) {
      const seed = scheduleSeed(o.seed, i);
      const cluster = await startCluster(bundle, pg, dir, `chaos_${i}`);
      let r: ScheduleResult | undefined;
      try {
        r = await runSchedule(cluster, seed, o.durationMs, o.settleMs, o.ha ? { ha: true } : {});
        results.push(r);
        log(`schedule ${i + 1}/${o.schedules} seed ${seed}: ${r.faults.length} faults, ${r.violations.length} violations, converged ${r.convergenceMs ?? 'never'} ms`);
      } finally {
        const bad = !r || r.violations.length > 0;
        keep ||= bad;
        await cluster.close(bad);
      }
    }
  } finally {
    await pg.close();
    if (!keep) rmSync(dir, { recursive: true, force: true });
    else if (!KEEP_DB) rmSync(join(dir, 'pg'), { recursive: true, force: true });
  }
  return aggregate(o, results, keep ? dir : undefined);
}

export function aggregate(o: ChaosOptions, results: readonly ScheduleResult[], logs?: string): ChaosReport {
  const violations = results.flatMap((r, i) => r.violations.map((v) => ({ ...v, schedule: i, scheduleSeed: r.seed })));
  const byKind: Record<string, number> = {};
  for (const v of violations) byKind[v.kind] = (byKind[v.kind] ?? 0) + 1;
  const conv = results.map((r) => r.convergenceMs).filter((x): x is number => x !== undefined);
  const calls: Record<string, number> = {};
  for (const r of results) for (const [k, n] of Object.entries(r.calls.byStatus)) calls[k] = (calls[k] ?? 0) + n;
  const faultsByKind = countByKind(results.flatMap((r) => r.faults));
  for (const k of FAULT_KINDS) faultsByKind[k] ??= 0;
  return {
    bench: 'chaos',
    database: o.ha ? 'patroni' : 'single',
    seed: o.seed,
    schedules: results.length,
    durationMs: o.durationMs,
    faultsByKind,
    faultErrors: results.flatMap((r) => r.faultErrors),
    violations,
    violationsByKind: byKind,
    convergenceAfterHealMs: { p50: percentile(conv, 50), p99: percentile(conv, 99), max: percentile(conv, 100) },
    calls,
    serverErrors: results.flatMap((r) => r.serverErrors).slice(0, SHOWN_SERVER_ERRORS),
    outcome: sumOutcomes(results),
    ...(logs ? { logs } : {}),
  };
}

function sumOutcomes(results: readonly ScheduleResult[]): ChaosReport['outcome'] {
  const deployments: Record<string, number> = {};
  const progressive: Record<string, number> = {};
  const autoscaled: Record<string, number> = {};
  let wantedResources = 0;
  for (const r of results) {
    wantedResources += r.outcome.wantedResources;
    for (const [k, n] of Object.entries(r.outcome.deployments)) deployments[k] = (deployments[k] ?? 0) + n;
    for (const [k, n] of Object.entries(r.outcome.progressive)) progressive[k] = (progressive[k] ?? 0) + n;
    for (const [k, n] of Object.entries(r.outcome.autoscaled ?? {})) autoscaled[k] = (autoscaled[k] ?? 0) + n;
  }
  return { deployments, wantedResources, progressive, autoscaled };
}
