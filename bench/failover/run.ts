// One failover run (bench:failover): ctrl and two regions (a
// simulator and a krane each) in this process on a Patroni cluster, reached as a user would run
// it: the pools through PgBouncer (transaction mode), LISTEN through HAProxy's primary port,
// full syncs from the standby through its replica port. A stream of deploys (through the CLI's
// own client: retried through the outage, each create with an Idempotency-Key), a lane of
// canaries and a sentinel fleet rollout run while the cluster first switches over (planned)
// and then loses its primary to SIGKILL (Patroni promotes the standby).
//
// Measured from each fault: the first write accepted by a call sent after it, and the time
// until every deployment accepted before it is final and both regions run what the database
// says for them. At the end: accepted writes the database no longer has (writesLost), what the
// regions run that differs from the database (changesMissed), failed workflows, a once-per-run
// status written twice (stepsTwice), and deployments made twice by a retried call.
import postgres from 'postgres';
import { startHaCluster, type HaCluster } from '../../scripts/ha/cluster';
import { ApiClient } from '../../src/cli';
import { newIdempotencyKey } from '../../src/cli/retry';
import { createLogger, type LogLevel } from '../../src/log';
import { startStack, type StackHandle } from '../../src/modes/stack';
import { Watcher } from '../../src/sync/watcher';
import { diffRegion, stepsTwice } from '../chaos/invariants';
import { listenStatus, readActual, readDesired } from '../chaos/observe';
import { settle, watchConverged, type Lane } from './observe';

export interface FailoverOptions {
  /** Patroni's synchronous mode (nothing committed is lost) or asynchronous. */
  synchronous: boolean;
  durationMs: number;
  /** Offsets from the start of the workload. */
  switchoverAtMs: number;
  killAtMs: number;
  /** Between two deploys of the rolling lane. */
  gapMs: number;
  /** After the workload: how long deployments and workflows get to finish. */
  settleMs: number;
  /** PostgreSQL with fsync (real commit costs) rather than the disposable default. */
  durable?: boolean;
  log?: (line: string) => void;
}

export interface FaultFigures {
  /** ms from the fault to the first accepted write of a call sent after it (null: none). */
  firstWriteMs: number | null;
  /** ms from the fault until every deployment accepted before it was final and ran as the database says in both regions (null: not within the run). */
  convergedMs: number | null;
}

export interface FailoverReport {
  bench: 'failover';
  mode: 'synchronous' | 'asynchronous';
  durationMs: number;
  writesLost: number;
  firstWriteMs: number | null;
  convergedMs: number | null;
  changesMissed: number;
  workflowsFailed: number;
  switchover: FaultFigures;
  /** How long the kill waited past --kill-at for the old primary to be a synchronous standby again. */
  killDelayedMs: number;
  stepsTwice: number;
  duplicates: number;
  deploys: { accepted: number; callsFailed: number; byStatus: Record<string, number> };
  canaries: Record<string, number>;
  /** Why canaries were rolled back (a region that could not report through the outage fails a step closed). */
  rolledBack: string[];
  /** Failed deployments by their error. */
  failedReasons: Record<string, number>;
  rollout: string;
  fullSyncs: number;
  /** What the regions ran that the database did not say, or the reverse, at the end. */
  differences: Record<string, string[]>;
}

const REGIONS = ['us-east-1', 'eu-west-1'];
/** Rolling deploys go round these environments (each gets a sentinel per region: the rollout's). */
const ROLLING_ENVIRONMENTS = ['default', 'env_failover_a', 'env_failover_b'];
/** Canaries walk one at a time in an environment of their own (their traffic is theirs). */
const CANARY_ENVIRONMENT = 'env_failover_canary';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Over 80 lines: the run's phases in order (cluster, stack, workload with its two faults,
// settling, the figures), which share its handles; each phase is a few lines.
export async function runFailover(o: FailoverOptions): Promise<FailoverReport> {
  const log = o.log ?? (() => {});
  const cluster = await startHaCluster({ nodes: 2, synchronous: o.synchronous, durable: o.durable });
  let stack: StackHandle | undefined;
  let sql: postgres.Sql | undefined;
  try {
    log(`cluster up (${o.synchronous ? 'synchronous' : 'asynchronous'}): ${cluster.nodes.map((n) => n.name).join(', ')}`);
    sql = postgres(cluster.primaryUrl, { max: 4, onnotice: () => {}, connection: { application_name: 'failover-bench' } });
    const watchers: Watcher[] = [];
    stack = await startStack({
      databaseUrl: cluster.poolerUrl,
      regions: REGIONS,
      readyDelayMs: 20,
      // FAILOVER_LOG=debug (or info): the stack's log on stderr, to diagnose a bad run.
      logger: createLogger((process.env.FAILOVER_LOG as LogLevel | undefined) ?? 'silent'),
      sim: { minReadyScale: 0.001 },
      ctrl: { recheckMs: 1000, settings: { databaseDirectUrl: cluster.primaryUrl, databaseReadUrl: cluster.replicaUrl } },
      krane: {
        tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500 },
        createWatcher: (w) => {
          const x = new Watcher({ ...w, backoffMinMs: 50, backoffMaxMs: 1_000 });
          watchers.push(x);
          return x;
        },
      },
    });
    for (const [i, id] of [...ROLLING_ENVIRONMENTS.slice(1), CANARY_ENVIRONMENT].entries()) {
      await sql`INSERT INTO environments (id, workspace_id, project_id, app_id, slug) VALUES (${id}, 'default', 'default', 'default', ${`failover-${i}`}) ON CONFLICT (id) DO NOTHING`;
    }
    const status = await listenStatus(sql);
    const client = new ApiClient({ url: stack.ctrl.url, token: stack.adminToken, source: 'flag', devFilePath: '' });
    const lane: Lane = { accepted: [], callsFailed: 0, canaries: [] };
    const t0 = Date.now();
    const stop = { at: t0 + o.durationMs };
    const faults = { switchoverAt: 0, killAt: 0, killDelayedMs: 0 };
    const converged: { switchover?: Promise<number | null>; kill?: Promise<number | null> } = {};
    let rolloutCall: Promise<string> = Promise.resolve('not started');

    const rolling = rollingLane(client, lane, stop, o.gapMs);
    const canaries = canaryLane(client, lane, stop);
    const faultsDone = (async () => {
      await sleep(o.switchoverAtMs);
      faults.switchoverAt = Date.now();
      converged.switchover = watchConverged(sql!, stack!, lane, faults.switchoverAt, t0 + o.killAtMs, (l) => log(`switchover: ${l}`));
      log(`switchover to ${await cluster.switchover()} in ${Date.now() - faults.switchoverAt} ms`);
      await sleep(Math.max(0, t0 + o.killAtMs - 1_000 - Date.now()));
      // Started just before the kill, so its waves span it; the call answers when the rollout
      // has run (an engine call behind the API), so it is not waited for here.
      rolloutCall = client.post('/v1/sentinel-rollouts', { body: { image: 'ghcr.io/unkeyed/sentinel:v2', wavePercentages: [34, 67, 100] }, timeoutMs: 0 }).then(
        () => 'answered',
        (e: Error) => `failed: ${e.message}`,
      );
      await sleep(Math.max(0, t0 + o.killAtMs - Date.now()));
      // In synchronous mode Patroni promotes only a standby it has recorded as synchronous (one
      // that has every commit); after the switchover the old primary must rejoin and catch up
      // first. Killing the primary before that measures a refusal to fail over (by design,
      // docs/ha.md), not a failover, so the kill waits for it and reports the wait.
      const leader = await cluster.waitLeader();
      const waitFrom = Date.now();
      for (const n of cluster.nodes) if (n.name !== leader) await cluster.waitStandby(n.name);
      faults.killDelayedMs = Date.now() - waitFrom;
      faults.killAt = Date.now();
      converged.kill = watchConverged(sql!, stack!, lane, faults.killAt, stop.at + o.settleMs, (l) => log(`kill: ${l}`));
      await cluster.kill(leader);
      log(`killed ${leader}; ${await cluster.waitLeader(leader)} leads after ${Date.now() - faults.killAt} ms`);
      return leader;
    })();
    const killed = await faultsDone;
    await Promise.all([rolling, canaries]);
    const convergedMs = { switchover: await converged.switchover!, kill: await converged.kill! };
    // The killed node comes back as a standby (pg_rewind), as an operator would bring it back.
    await cluster.start(killed);
    const settled = await settle(sql, stack, lane, Date.now() + o.settleMs);
    log(`settled: ${JSON.stringify(settled.byStatus)}`);

    const failedReasons: Record<string, number> = {};
    for (const r of await sql<{ error: string | null; n: number }[]>`SELECT error, count(*)::int AS n FROM deployments WHERE id = ANY(${lane.accepted.map((a) => a.id)}::text[]) AND status = 'failed' GROUP BY error`) failedReasons[r.error ?? 'no reason'] = r.n;
    const differences: Record<string, string[]> = {};
    const desired = await readDesired(sql);
    for (const [name, r] of stack.regions) {
      const d = diffRegion(desired.get(name) ?? new Map(), await readActual(r.sim.url));
      if (d.length) differences[name] = d;
    }
    await status.stop();
    const ids = lane.accepted.map((a) => a.id);
    const [counts] = await sql<{ present: number; made: number; failed: number }[]>`
      SELECT (SELECT count(*)::int FROM deployments WHERE id = ANY(${ids}::text[])) AS present,
             (SELECT count(*)::int FROM deployments WHERE environment_id = ANY(${[...ROLLING_ENVIRONMENTS, CANARY_ENVIRONMENT]}::text[])) AS made,
             (SELECT count(*)::int FROM engine_invocations WHERE status = 'failed') + (SELECT count(*)::int FROM deployments WHERE status = 'failed') AS failed`;
    const { present, made, failed } = counts!;
    const rolledBack = (await sql<{ error: string | null }[]>`SELECT error FROM deployments WHERE id = ANY(${lane.canaries}::text[]) AND status = 'rolled_back'`).map((r) => r.error ?? 'no reason');
    const current = await client.get('/v1/sentinel-rollouts/current');
    const rollout = `${current && 'state' in current ? current.state : 'none'}; its call ${await rolloutCall}`;
    client.close();
    const firstWrite = (after: number) => {
      const t = lane.accepted.filter((a) => a.sentAt >= after).map((a) => a.acceptedAt - after);
      return t.length ? Math.min(...t) : null;
    };
    return {
      bench: 'failover',
      mode: o.synchronous ? 'synchronous' : 'asynchronous',
      durationMs: o.durationMs,
      writesLost: ids.length - present,
      firstWriteMs: firstWrite(faults.killAt),
      convergedMs: convergedMs.kill,
      changesMissed: Object.values(differences).reduce((n, d) => n + d.length, 0),
      workflowsFailed: Number(failed),
      switchover: { firstWriteMs: firstWrite(faults.switchoverAt), convergedMs: convergedMs.switchover },
      killDelayedMs: faults.killDelayedMs,
      stepsTwice: stepsTwice(status.events).length,
      // The environments are the bench's own: more deployments there than accepted calls means
      // a retried create made one twice (or a call that gave up had made one).
      duplicates: Math.max(0, made - lane.accepted.length),
      deploys: { accepted: lane.accepted.length, callsFailed: lane.callsFailed, byStatus: settled.byStatus },
      canaries: settled.canaries,
      rolledBack,
      failedReasons,
      rollout,
      fullSyncs: watchers.reduce((n, w) => n + w.stats.snapshotsCompleted, 0),
      differences,
    };
  } finally {
    await stack?.close().catch(() => {});
    await sql?.end({ timeout: 1 }).catch(() => {});
    await cluster.stop();
  }
}

/** Rolling deploys round the environments, one every `gapMs`, each call retried like the CLI's. */
async function rollingLane(client: ApiClient, lane: Lane, stop: { at: number }, gapMs: number): Promise<void> {
  const inFlight: Promise<unknown>[] = [];
  for (let i = 0; Date.now() < stop.at; i++) {
    inFlight.push(deploy(client, lane, { image: `nginx:1.${i % 50}`, environmentId: ROLLING_ENVIRONMENTS[i % ROLLING_ENVIRONMENTS.length]!, regions: REGIONS, replicas: 1 }));
    await sleep(gapMs);
  }
  await Promise.all(inFlight);
}

/** One canary at a time in its own environment: deploy, wait until it ends, again. */
async function canaryLane(client: ApiClient, lane: Lane, stop: { at: number }): Promise<void> {
  for (let i = 0; Date.now() < stop.at; i++) {
    const id = await deploy(client, lane, { image: `nginx:2.${i}`, environmentId: CANARY_ENVIRONMENT, regions: REGIONS, replicas: 1, strategy: { type: 'canary', steps: [{ weight: 50, pause: '2s' }] } });
    if (!id) continue;
    lane.canaries.push(id);
    for (;;) {
      const d = await client.get('/v1/deployments/{id}', { path: { id } }).catch(() => undefined);
      if (d && ['ready', 'failed', 'rolled_back', 'superseded', 'stopped'].includes(d.status)) break;
      await sleep(250);
    }
  }
}

async function deploy(client: ApiClient, lane: Lane, body: Record<string, unknown>): Promise<string | undefined> {
  const sentAt = Date.now();
  try {
    const r = await client.post('/v1/deployments', { body, retry: true, idempotencyKey: newIdempotencyKey() });
    lane.accepted.push({ id: r.id, sentAt, acceptedAt: Date.now() });
    return r.id;
  } catch {
    lane.callsFailed++;
    return undefined;
  }
}

export type { HaCluster };
