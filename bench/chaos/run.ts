// One chaos schedule on a running cluster: workload and faults together, then heal, then the
// invariants. Returns what it saw; bench/chaos.ts and the CI test aggregate and judge.
import type { ChaosCluster } from './cluster';
import { faultRunner } from './faults';
import { diffRegion, diffRoutes, percentile, stepsTwice, trafficViolations, wrongDeletions, type Deletion, type Violation } from './invariants';
import { listenStatus, readActual, readDeletions, readDesired, readDesiredRoutes, readRoutes, sampleDesired, sampleTraffic } from './observe';
import { startStandInPrometheus } from '../../tests/helpers/prometheus-stand-in';
import { generateSchedule, type Fault, type ScheduleOptions } from './schedule';
import { Workload, type Call } from './workload';

/** After healing, the cluster must equal desired state within this (issue 10). */
export const CONVERGE_WITHIN_MS = 30_000;
/**
 * After healing, every workflow must be terminal and every waiting call answered by then: a
 * sentinel deploy that was waiting needs its rollout (minReadySeconds 5 per surge step) after
 * the cluster converged, so twice the convergence limit leaves room without hiding a hang.
 */
export const SETTLE_WITHIN_MS = 60_000;
/** Desired-state sampling period: the deletion check's resolution. */
const SAMPLE_EVERY_MS = 250;
/** Convergence and terminal-state polling: fine enough for the p50, light on the database. */
const POLL_MS = 500;
const TERMINAL = ['completed', 'failed', 'cancelled'];
/** The progressive lanes' environments (progressive.ts): two, so walks overlap and faults meet more of them. */
const LANE_ENVIRONMENTS = ['env_chaos_progressive_a', 'env_chaos_progressive_b'];
/** Workload calls that wait on a workflow's result (engine.call behind the API), by the
 *  workflow handler each starts. */
const WAITING_CALLS = new Map<string, { service: string; handler: string }>([
  ['sentinel-deploy', { service: 'SentinelService', handler: 'deploy' }],
  ['rollout-start', { service: 'SentinelRolloutService', handler: 'rollout' }],
  ['rollout-resume', { service: 'SentinelRolloutService', handler: 'resume' }],
  ['rollout-cancel', { service: 'SentinelRolloutService', handler: 'cancel' }],
  ['rollout-rollback', { service: 'SentinelRolloutService', handler: 'rollbackAll' }],
]);

export interface ScheduleResult {
  seed: number;
  faults: Fault[];
  faultErrors: string[];
  violations: Violation[];
  /** ms from heal until both regions equalled desired state (undefined: never within the limit). */
  convergenceMs?: number;
  calls: { total: number; byStatus: Record<string, number> };
  /** 5xx answers to calls that do not wait on a workflow: not violations, but worth reading. */
  serverErrors: { what: string; status: number; body: unknown }[];
  /** What the workload left behind: deployments by status, resources wanted per region, the
   *  progressive lanes' deployments by `strategy:status` (e.g. `canary:rolled_back`), and the
   *  autoscaled ones by `status:max<replicas their autoscaler ran>` (e.g. `ready:max3`). */
  outcome: { deployments: Record<string, number>; wantedResources: number; progressive: Record<string, number>; autoscaled?: Record<string, number> };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A 503 "database unavailable, retry" is the right answer when the call started nothing: ctrl
 * checks the rollout's state before starting one (seed 90 met the outage there). It lost track
 * of work only if the workflow it starts was started meanwhile; another call of the same kind
 * in that window counts too, which errs towards reporting.
 */
export async function refusedBeforeStarting(c: Pick<ChaosCluster, 'sql'>, call: Call): Promise<boolean> {
  const code = (call.body as { error?: { code?: string } } | null)?.error?.code;
  const target = WAITING_CALLS.get(call.what);
  if (call.status !== 503 || code !== 'ERR_DATABASE_UNAVAILABLE' || !target || call.endedAt === undefined) return false;
  const [r] = await c.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM engine_invocations
    WHERE service = ${target.service} AND handler = ${target.handler}
      AND created_at BETWEEN to_timestamp(${(call.startedAt - 1_000) / 1000}) AND to_timestamp(${(call.endedAt + 1_000) / 1000})`;
  return r!.n === 0;
}

export async function runSchedule(c: ChaosCluster, seed: number, durationMs: number, settleMs = SETTLE_WITHIN_MS, opts: Partial<ScheduleOptions> = {}): Promise<ScheduleResult> {
  const faults = generateSchedule(seed, { durationMs, ctrlReplicas: c.ctrls.length, regions: c.regions.length, meanGapMs: 2_500, ...opts });
  const since = await auditHeads(c);
  const sampler = sampleDesired(c.sql, SAMPLE_EVERY_MS);
  const status = await listenStatus(c.sql);
  const prometheus = await startStandInPrometheus(0.01);
  const lanes = await laneEnvironments(c);
  const traffic = watchTraffic(c);
  const workload = new Workload({
    seed: seed ^ 0x5bd1e995,
    ctrlUrls: c.ctrls.map((n) => n.url),
    adminToken: c.adminToken,
    regions: c.regions.map((r) => r.name),
    durationMs,
    gapMs: 700,
    progressive: { environmentIds: lanes, prometheusUrl: prometheus.url, setMetric: (v) => prometheus.set(v) },
  });
  const runner = faultRunner(c);
  const faultsDone = runner.run(faults);
  await workload.run();
  await faultsDone;
  await runner.healAll();
  const healAt = Date.now();
  const violations: Violation[] = [];

  const convergenceMs = await waitConverged(c, healAt, violations);
  await workload.settle(Math.max(0, healAt + settleMs - Date.now()));
  for (const call of workload.calls) {
    if (call.endedAt === undefined) violations.push({ kind: 'call-unanswered', detail: { what: call.what, replica: call.replica, waitingMs: Date.now() - call.startedAt } });
    // A call that waits on a workflow and gets a 5xx lost track of work that goes on: engine
    // waits must ride out infrastructure faults (DESIGN §10). Network errors are left out: they
    // come from a replica killed mid-call, which no server can answer through.
    else if (call.what === 'sentinel-deploy' && (call.body as { status?: string } | null)?.status === 'FAILED') violations.push({ kind: 'workflow-failed', detail: { what: call.what, body: call.body } });
    else if (WAITING_CALLS.has(call.what) && (call.status ?? 0) >= 500 && !(await refusedBeforeStarting(c, call))) {
      violations.push({ kind: 'call-failed', detail: { what: call.what, replica: call.replica, status: call.status, body: call.body } });
    }
  }
  workload.abort();
  await waitTerminal(c, healAt + settleMs, violations);
  // Workflows that ended after the first look may have changed desired state again (a failed
  // deploy stops its topology): the cluster must follow that too.
  await waitConverged(c, Date.now(), violations, 'after workflows ended');
  violations.push(...(await failures(c)));
  sampler.stop();
  violations.push(...traffic.stop());
  await prometheus.close();
  await status.stop();
  violations.push(...stepsTwice(status.events));
  const deletions = await deletionsSince(c, since);
  const touched = (key: string, from: number, to: number) => workload.touches.some((t) => t.key === key && t.t >= from - 1_000 && t.t <= to);
  violations.push(...wrongDeletions(deletions, sampler.samples, touched));

  const byStatus: Record<string, number> = {};
  const serverErrors: ScheduleResult['serverErrors'] = [];
  for (const call of workload.calls) {
    const k = call.endedAt === undefined ? 'unanswered' : call.error ? 'network-error' : String(call.status);
    byStatus[k] = (byStatus[k] ?? 0) + 1;
    if ((call.status ?? 0) >= 500 && !WAITING_CALLS.has(call.what)) serverErrors.push({ what: call.what, status: call.status!, body: call.body });
  }
  return {
    seed,
    faults,
    faultErrors: runner.errors,
    violations,
    ...(convergenceMs !== undefined ? { convergenceMs } : {}),
    calls: { total: workload.calls.length, byStatus },
    serverErrors,
    outcome: await outcome(c),
  };
}

/** The traffic rules judged on every sample until stopped; each broken rule once per
 *  environment, deployment and rule (a table that stays wrong is one finding, not one per sample). */
function watchTraffic(c: ChaosCluster): { stop(): Violation[] } {
  const found = new Map<string, Violation>();
  const sampler = sampleTraffic(c.sql, SAMPLE_EVERY_MS, (t, rows) => {
    for (const v of trafficViolations(t, rows)) {
      const key = `${v.detail.environmentId}/${v.detail.deploymentId ?? ''}/${v.detail.rule}`;
      if (!found.has(key)) found.set(key, v);
    }
  });
  return {
    stop() {
      sampler.stop();
      return [...found.values()];
    },
  };
}

/** The progressive lanes' environments (workload.ts): made here, as an operator would before. */
async function laneEnvironments(c: ChaosCluster): Promise<string[]> {
  for (const [i, id] of LANE_ENVIRONMENTS.entries()) {
    await c.sql`INSERT INTO environments (id, workspace_id, project_id, app_id, slug)
                VALUES (${id}, 'default', 'default', 'default', ${`progressive-${i}`}) ON CONFLICT (id) DO NOTHING`;
  }
  return LANE_ENVIRONMENTS;
}

/** Polls until every region equals desired state; records the last difference if it never does. */
async function waitConverged(c: ChaosCluster, healAt: number, violations: Violation[], phase = 'after heal'): Promise<number | undefined> {
  let last: Record<string, string[]> = {};
  while (Date.now() - healAt < CONVERGE_WITHIN_MS) {
    try {
      const desired = await readDesired(c.sql);
      const tables = await readDesiredRoutes(c.sql);
      last = {};
      for (const r of c.regions) {
        // Workloads, and routes addressing exactly the ready pods (issue 33: an autoscaler's too).
        const { routes, ready } = await readRoutes(r.simUrl);
        const d = [...diffRegion(desired.get(r.name) ?? new Map(), await readActual(r.simUrl)), ...diffRoutes(tables.get(r.name) ?? new Map(), routes, (id) => ready.get(id) ?? [], r.name)];
        if (d.length) last[r.name] = d;
      }
      if (Object.keys(last).length === 0) return Date.now() - healAt;
    } catch (err) {
      last = { error: [(err as Error).message] };
    }
    await sleep(POLL_MS);
  }
  violations.push({ kind: 'not-converged', detail: { phase, afterMs: CONVERGE_WITHIN_MS, differences: last } });
  return undefined;
}

async function waitTerminal(c: ChaosCluster, deadline: number, violations: Violation[]): Promise<void> {
  let open: { id: string; service: string; handler: string; status: string; attempts: number }[] = [];
  do {
    open = await c.sql<typeof open>`
      SELECT id, service, handler, status, attempts FROM engine_invocations WHERE status <> ALL(${TERMINAL}) ORDER BY created_at`;
    if (open.length === 0) return;
    await sleep(POLL_MS);
  } while (Date.now() < deadline);
  for (const o of open) violations.push({ kind: 'workflow-not-terminal', detail: o });
}

/**
 * Refusals the workload provokes itself: two of its rollout actions race (both saw a running
 * rollout, the second cancel finds it cancelled). They are answers about state, not faults.
 */
const WORKLOAD_REFUSALS = new Set(['ERR_ROLLOUT_STATE', 'ERR_ROLLOUT_IN_PROGRESS']);

/** With healthy images only, every other failure is an infrastructure fault reaching the workflows. */
async function failures(c: ChaosCluster): Promise<Violation[]> {
  const out: Violation[] = [];
  const inv = await c.sql<{ id: string; service: string; handler: string; error: { code?: string } | null }[]>`
    SELECT id, service, handler, error FROM engine_invocations WHERE status = 'failed' ORDER BY created_at`;
  for (const i of inv) if (!WORKLOAD_REFUSALS.has(i.error?.code ?? '')) out.push({ kind: 'workflow-failed', detail: i });
  const deps = await c.sql<{ id: string; error: string | null }[]>`SELECT id, error FROM deployments WHERE status = 'failed' ORDER BY created_at`;
  for (const d of deps) out.push({ kind: 'deployment-failed', detail: d });
  return out;
}

async function outcome(c: ChaosCluster): Promise<ScheduleResult['outcome']> {
  const rows = await c.sql<{ status: string; n: number }[]>`SELECT status, count(*)::int AS n FROM deployments GROUP BY status`;
  const lane = await c.sql<{ k: string; n: number }[]>`
    SELECT coalesce(strategy->>'type', 'rolling') || ':' || status AS k, count(*)::int AS n FROM deployments WHERE environment_id = ANY(${LANE_ENVIRONMENTS}::text[]) GROUP BY 1`;
  // The autoscaled ones by status and the most replicas their autoscalers ran (krane's reports).
  const scaled = await c.sql<{ k: string; n: number }[]>`
    SELECT d.status || ':max' || coalesce((SELECT max(a.current_replicas) FROM topology_autoscalers a WHERE a.deployment_id = d.id), 0) AS k, count(*)::int AS n
    FROM deployments d WHERE d.autoscaling IS NOT NULL GROUP BY 1`;
  const desired = await readDesired(c.sql);
  return {
    deployments: Object.fromEntries(rows.map((r) => [r.status, r.n])),
    wantedResources: [...desired.values()].reduce((n, m) => n + m.size, 0),
    progressive: Object.fromEntries(lane.map((r) => [r.k, r.n])),
    autoscaled: Object.fromEntries(scaled.map((r) => [r.k, r.n])),
  };
}

async function auditHeads(c: ChaosCluster): Promise<number[]> {
  return Promise.all(c.regions.map(async (r) => (await fetch(`${r.simUrl}/_sim/audit/deletions?since=999999999`).then((x) => x.json()) as { lastSeq: number }).lastSeq));
}

async function deletionsSince(c: ChaosCluster, since: number[]): Promise<Deletion[]> {
  const out: Deletion[] = [];
  for (const [i, r] of c.regions.entries()) {
    const { entries } = await readDeletions(r.simUrl);
    for (const e of entries) if (e.seq > since[i]!) out.push({ region: r.name, t: Date.parse(e.time), kind: e.kind, name: e.name, cause: e.cause, labels: e.labels });
  }
  return out;
}

export { percentile };
