// The real side of the model-based test: one in-process stack (ctrl, engine, a kube-sim and a
// krane per region) plus a second ctrl replica on the same database, and a stand-in Prometheus
// the commands set. Each fast-check sequence gets an environment of its own, so sequences share
// the processes (starting a stack costs seconds) but never a routing table. The driver runs
// what a command asks and reads snapshots for the pure model (lifecycle-model.ts) to judge.
import { after } from 'node:test';
import { testStack, type TestStack } from '../helpers/stack';
import { startStandInPrometheus, type StandInPrometheus } from '../helpers/prometheus-stand-in';
import { loadConfig } from '../../src/config';
import { startCtrl, type CtrlHandle } from '../../src/modes/ctrl';
import { newId } from '../../src/ids';
import { tenancy } from '../../src/store';
import type { Model, Snapshot } from './lifecycle-model';
import { readDesired, readObjects, readSnapshot } from './observe';
import { convergenceBreaks } from './convergence';

export const REGIONS = ['us-east-1', 'eu-west-1'];
/** The analysis bound and the values the metric commands set: good passes, bad fails, absent is no data. */
export const MAX = 0.05;
export const METRIC_VALUE = { good: 0.01, bad: 0.9, absent: null } as const;

/** An autoscaled deployment's bounds: the simulator's autoscaler takes a busy one to 3. */
export const AUTOSCALING = { minReplicas: 1, maxReplicas: 3 };

/** Fast enough for dozens of sequences a minute, slow enough that commands land mid-walk:
 *  a region is offline after 1 s of silence and a deploy waits 3 s for it. */
const CTRL_SETTINGS = { outboundAllow: '127.0.0.1', agentOfflineAfter: '1s', offlineGrace: '3s', engineLease: '1500ms', sentinelTimeout: '20s' };
/** How long a sequence's starting deployment may take to be ready (an offline region's grace
 *  is 3 s of it). */
const PREPARE_MS = 20_000;
/** A hung call fails the command (and names it) instead of stalling the run. */
const CALL_DEADLINE_MS = 20_000;

export interface Answer {
  status: number;
  body: any;
}

export class Driver {
  environmentId = '';
  private turn = 0;
  private constructor(
    readonly stack: TestStack,
    readonly second: CtrlHandle,
    readonly prom: StandInPrometheus,
  ) {}

  static async start(): Promise<Driver> {
    const engine = { stealAfterMs: 0 };
    // Pods ready after 40 ms (400 ms for a `slow` image): an abort or a stop can land while a
    // deployment's instances start.
    // Heartbeats well inside agentOfflineAfter (1 s): krane's production 10 s would let a region
    // with a running krane read as offline whenever its stream is between polls (a ctrl restart),
    // which the long runs saw as deploys failing on an 'offline' region after the 3 s grace.
    const krane = { tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500, heartbeatMs: 250 } };
    // Autoscalers evaluated every 200 ms, their 5-minute scale-down window cut to 6 s: a busy
    // (cpuhot) deployment reaches its maximum within a sequence (issue 33).
    const sim = { minReadyScale: 0.001, hpaSyncMs: 200, hpaStabilizationScale: 0.02 };
    const stack = await testStack({ regions: REGIONS, readyDelayMs: 40, sim, ctrl: { engine, recheckMs: 200, settings: CTRL_SETTINGS }, krane });
    const cfg = loadConfig(
      'ctrl',
      {
        databaseUrl: stack.db.url,
        adminToken: stack.adminToken,
        listen: '127.0.0.1:0',
        agentTokens: REGIONS.map((r) => `${r}=${stack.regions.get(r)!.token}`).join(','),
        logLevel: 'silent',
        noMigrate: true,
        ...CTRL_SETTINGS,
      },
      {},
    );
    const second = await startCtrl(cfg, { recheckMs: 200, engine });
    const prom = await startStandInPrometheus(METRIC_VALUE.good);
    const driver = new Driver(stack, second, prom);
    after(() => driver.close());
    return driver;
  }

  /**
   * The second replica, then each krane, ctrl and the simulators, in that order. Left to the
   * stack's own after hook (which closes the kranes through their supervisor), the file took
   * 100-300 s to exit after a run with krane and ctrl restarts, with ctrl's and the simulators'
   * servers still open; closed in this order it exits at once. The hook's second close is a no-op.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.second.close();
    await this.prom.close();
    for (const r of this.stack.regions.values()) await r.krane.close();
    await this.stack.ctrl.close();
    for (const r of this.stack.regions.values()) await r.sim.close();
  }
  private closed = false;

  /**
   * A sequence's starting point: a new environment with one rolling deployment ready at 100%,
   * made while the previous sequence runs (the sentinels of a new environment make it the
   * slowest part of a sequence). Undefined when it did not get there, e.g. the previous
   * sequence had a region offline past the grace: the caller makes another. The reason says
   * why, for the failure message when the second one does not get there either.
   */
  async prepare(): Promise<{ environmentId: string; stable: string } | { reason: string }> {
    const environmentId = newId('env');
    try {
      await tenancy.insertEnvironment(this.stack.db.sql, { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId, slug: `model-${environmentId.slice(-8)}` });
      // A starting point is made on a healthy system: after a ctrl restart both regions were
      // once seen offline together for seconds with both kranes running (reported in issue 23's
      // notes), which failed this deploy after the 3 s grace twice in a row.
      for (const until = Date.now() + PREPARE_MS; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
        const online = await this.stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM region_liveness WHERE status = 'online' AND region = ANY(${REGIONS}::text[])`;
        if (online[0]!.n === REGIONS.length) break;
      }
      const a = await this.create(undefined, 'nginx:1.27', environmentId);
      if (a.status !== 202) return { reason: `create answered ${a.status}: ${JSON.stringify(a.body)}` };
      const deadline = Date.now() + PREPARE_MS;
      let last: { status: string; error: string | null } | undefined;
      while (Date.now() < deadline) {
        [last] = await this.stack.db.sql<{ status: string; error: string | null }[]>`SELECT status, error FROM deployments WHERE id = ${a.body.id}`;
        if (last?.status === 'ready') return { environmentId, stable: a.body.id };
        if (last && ['failed', 'stopped'].includes(last.status)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const regions = await this.stack.db.sql<{ region: string; status: string }[]>`SELECT region, status FROM region_liveness`;
      return { reason: `${a.body.id} is ${last?.status} (${last?.error ?? 'no error'}) after ${PREPARE_MS} ms; regions ${regions.map((r) => `${r.region} ${r.status}`).join(', ')}; kranes down: ${[...this.kraneDown].join(', ') || 'none'}` };
    } catch (err) {
      // a ctrl restart or a closing stack: the caller makes another
      return { reason: `${(err as Error).message}` };
    }
  }

  /** The next sequence runs in `environmentId`, with the metric good and every krane up. */
  async newSequence(environmentId: string): Promise<void> {
    for (const r of REGIONS) if (this.kraneDown.has(r)) await this.online(r);
    this.prom.set(METRIC_VALUE.good);
    this.environmentId = environmentId;
  }

  /**
   * A finished sequence's environment goes: its deployments stopped, then the environment
   * deleted, so krane removes its sentinels, policies and routes. Without this every sequence
   * left two sentinels behind for good, and a 1,000-sequence run grew the process past 2 GB in
   * its first 100 (each cluster and each krane holding every environment's objects). Made in
   * the background, like prepare; what did not go is counted, never fatal (a deletion refused
   * while a stop settles is tried again for a while).
   */
  async retire(environmentId: string): Promise<boolean> {
    const ids = await this.stack.db.sql<{ id: string }[]>`SELECT id FROM deployments WHERE environment_id = ${environmentId}`;
    // Always the stack's own ctrl: the commands' alternation between replicas stays as replayed.
    for (const { id } of ids) await this.api(`/v1/deployments/${id}/stop`, {}, 'POST', this.stack.ctrl).catch(() => undefined);
    for (const until = Date.now() + PREPARE_MS; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      const r = await this.api(`/v1/environments/${environmentId}`, undefined, 'DELETE', this.stack.ctrl).catch(() => undefined);
      if (r?.status === 200 || r?.status === 404) return true;
    }
    return false;
  }

  /** Requests alternate between the two replicas, as behind a load balancer. */
  async api(path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST', to?: { url: string }): Promise<Answer> {
    const ctrl = to ?? (this.turn++ % 2 === 0 ? this.stack.ctrl : this.second);
    const r = await fetch(ctrl.url + path, {
      method,
      headers: { authorization: `Bearer ${this.stack.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(CALL_DEADLINE_MS),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  }

  /** A deployment of `image` in both regions: one replica, or 1-3 following CPU (`autoscaled`). */
  create(strategy: unknown, image = 'nginx:1.27', environmentId = this.environmentId, autoscaled = false): Promise<Answer> {
    const size = autoscaled ? { autoscaling: AUTOSCALING } : { replicas: 1 };
    return this.api('/v1/deployments', { image, regions: REGIONS, ...size, environmentId, ...(strategy ? { strategy } : {}) });
  }

  readonly kraneDown = new Set<string>();

  async offline(region: string): Promise<void> {
    this.kraneDown.add(region);
    await this.stack.stopKrane(region);
  }

  async online(region: string): Promise<void> {
    this.kraneDown.delete(region);
    await this.stack.restartKrane(region);
  }

  async restartKrane(region: string): Promise<void> {
    if (this.kraneDown.has(region)) return;
    await this.stack.restartKrane(region);
  }

  /** The stack's ctrl goes down gracefully and comes back; meanwhile the second replica serves
   *  the API and takes over the workflows whose leases the first handed back. */
  async restartCtrl(): Promise<void> {
    await this.stack.restartCtrl();
  }

  /** The rules' snapshot of the sequence's environment (observe.ts). */
  snapshot(m: Model): Promise<Snapshot> {
    return readSnapshot(this.stack, this.environmentId, m, (query) => this.prom.answered(query).filter((v) => v !== null && v > MAX).length);
  }

  /** How the clusters differ from desired state of the sequence's environment (convergence.ts). */
  async divergence(): Promise<string[]> {
    const want = await readDesired(this.stack, this.environmentId);
    return convergenceBreaks(want, readObjects(this.stack, this.environmentId));
  }

  /** Regions whose krane holds a GC pass for an operator's confirmation (its brake). */
  async gcHeld(): Promise<string[]> {
    return (await this.stack.db.sql<{ region: string }[]>`SELECT region FROM krane_gc_status WHERE held`).map((r) => r.region);
  }

  /**
   * What an operator does when krane's GC brake holds (`unkey-infra krane gc --confirm`): a krane
   * that restarted after its region's environment was deleted full-syncs and finds every object
   * of it undesired, which in the model's small clusters is more than the brake's half.
   */
  async confirmGc(region: string): Promise<number> {
    const r = this.stack.regions.get(region)!;
    const res = await fetch(`${r.krane.url}/gc/confirm`, { method: 'POST', headers: { authorization: `Bearer ${r.token}` }, signal: AbortSignal.timeout(CALL_DEADLINE_MS) });
    if (!res.ok) throw new Error(`krane of ${region} refused the GC confirmation: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { approved: number }).approved;
  }
}
