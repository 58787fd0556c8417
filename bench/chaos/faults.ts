// Carries out a schedule's faults on the chaos cluster, and heals everything at the end. Each
// fault heals itself after its duration (a killed process restarts, a proxy passes again, the
// simulator's chaos rule expires); `healAll` is the backstop that puts every part back at once.
import type { ChaosCluster } from './cluster';
import { isRunning, killChild, startChild } from './processes';
import type { Fault } from './schedule';
import { join } from 'node:path';

export interface FaultRunner {
  /** Starts every fault at its offset from now; resolves when the last one has healed. */
  run(faults: readonly Fault[]): Promise<void>;
  /** Stops pending faults and heals everything now. */
  healAll(): Promise<void>;
  /** Faults that could not be carried out (e.g. PostgreSQL refused to restart), with why. */
  readonly errors: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Shared by the faults of one runner: a PostgreSQL restart in progress, for healAll to await. */
interface RunnerState {
  pgDown?: Promise<void>;
}

async function applyFault(c: ChaosCluster, f: Fault, st: RunnerState): Promise<void> {
  const logDir = join(c.dir, 'logs');
  switch (f.kind) {
    case 'ctrl-kill': {
      const node = c.ctrls[f.target]!;
      await killChild(node.child);
      await sleep(f.durationMs);
      if (!isRunning(node.child)) startChild(node.child, c.bundle, logDir);
      return;
    }
    case 'krane-kill': {
      const r = c.regions[f.target]!;
      await killChild(r.krane);
      await sleep(f.durationMs);
      if (!isRunning(r.krane)) startChild(r.krane, c.bundle, logDir);
      return;
    }
    case 'pg-restart':
      st.pgDown = (async () => {
        await c.pg.stop();
        await sleep(f.durationMs);
        await c.pg.start();
      })();
      await st.pgDown;
      st.pgDown = undefined;
      return;
    case 'pg-failover':
    case 'pg-switchover': {
      // Only scheduled on a Patroni cluster (schedule.ts HA_FAULT_KINDS).
      const ha = c.pg.ha;
      if (!ha) throw new Error(`${f.kind} needs the Patroni cluster (bench:chaos -- --ha)`);
      st.pgDown = f.kind === 'pg-failover' ? ha.failover(f.durationMs) : ha.switchover();
      await st.pgDown;
      st.pgDown = undefined;
      return;
    }
    case 'pg-terminate':
      // Every session of ctrl (the harness's own has another application_name).
      await c.sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'unkey-infra%'`;
      return;
    case 'krane-ctrl-cut':
      return c.regions[f.target]!.kraneProxy.cut();
    case 'krane-ctrl-cut-mid':
      return c.regions[f.target]!.kraneProxy.cutMidChunk();
    case 'ctrl-pg-cut':
      return c.ctrls[f.target]!.pgProxy.cut();
    case 'krane-ctrl-delay':
    case 'ctrl-pg-delay':
    case 'krane-ctrl-blackhole':
    case 'ctrl-pg-blackhole': {
      const proxy = f.kind.startsWith('krane') ? c.regions[f.target]!.kraneProxy : c.ctrls[f.target]!.pgProxy;
      if (f.kind.endsWith('delay')) proxy.delay(f.latencyMs ?? 200);
      else proxy.blackhole();
      await sleep(f.durationMs);
      proxy.pass();
      return;
    }
    case 'sim-error':
    case 'sim-throttle':
    case 'sim-slow': {
      const mode = f.kind === 'sim-error' ? 'error' : f.kind === 'sim-throttle' ? 'throttle' : 'latency';
      const body = { mode, durationMs: f.durationMs, ...(f.ratio ? { ratio: f.ratio } : {}), ...(mode === 'latency' ? { latencyMs: f.latencyMs ?? 200 } : {}), ...(mode === 'throttle' ? { retryAfterSeconds: 1 } : {}) };
      const r = await fetch(`${c.regions[f.target]!.simUrl}/_sim/chaos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!r.ok) throw new Error(`/_sim/chaos answered ${r.status}: ${await r.text()}`);
      await sleep(f.durationMs);
      return;
    }
  }
}

export function faultRunner(c: ChaosCluster): FaultRunner {
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<Promise<void>>();
  const errors: string[] = [];
  const logDir = join(c.dir, 'logs');
  const st: RunnerState = {};
  return {
    errors,
    run(faults) {
      const t0 = Date.now();
      const all = faults.map(
        (f) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              timers.delete(timer);
              const p = applyFault(c, f, st).catch((err) => void errors.push(`${f.kind}@${f.atMs}: ${(err as Error).message}`));
              inFlight.add(p);
              void p.finally(() => (inFlight.delete(p), resolve()));
            }, Math.max(0, f.atMs - (Date.now() - t0)));
            timers.add(timer);
          }),
      );
      return Promise.all(all).then(() => undefined);
    },
    async healAll() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await Promise.allSettled([...inFlight]);
      if (st.pgDown) await st.pgDown.catch(() => {});
      await c.pg.start().catch((err) => void errors.push(`pg start: ${(err as Error).message}`));
      for (const p of [...c.ctrls.map((n) => n.pgProxy), ...c.regions.map((r) => r.kraneProxy)]) p.pass();
      for (const n of c.ctrls) if (!isRunning(n.child)) startChild(n.child, c.bundle, logDir);
      for (const r of c.regions) {
        if (!isRunning(r.krane)) startChild(r.krane, c.bundle, logDir);
        await fetch(`${r.simUrl}/_sim/chaos`, { method: 'DELETE' }).catch(() => {});
      }
    },
  };
}
