// The canary strategy (issue 13), run by DeployService once the new version's instances are
// ready in every target region. Traffic moves in journaled steps (src/workflow/traffic.ts):
//
//   canary-start: the canary joins the routing table at weight 0 beside the stable deployment
//   (the one with the most traffic); per step: set the weight, then hold for the pause, checking
//   the signals every interval; finally 100% canary and the stable deployment stopped, in one
//   transaction. Without a stable deployment (the environment's first) it is a rolling deploy.
//
// Signals: krane's reports always (a failed canary instance fails at once; instances not all
// ready when a step's pause ends fail it), Prometheus when the strategy has analysis
// (src/workflow/analysis.ts: `failureLimit` failed checks fail it; still inconclusive when the
// step ends fails closed), and an operator's promote (skip to 100%) or abort. A failure rolls
// back: 100% to the stable deployment in one change, the canary stopped, status `rolled_back`
// with the reason. Each check is one journaled step, so a ctrl crash resumes the walk where the
// journal ends, with the same deadlines. Status reports wake a hold early (the deploy's
// instances awakeable), so a crash loop rolls back in about one report, not one interval.
import { deployments, domains, events, instances, tenancy, topology, type Sql } from '../store';
import type { Backend } from '../store/routes';
import type { TxSql } from '../store/db';
import type { Deployment, TrafficCommand } from '../store/deployments';
import { TerminalError, TimeoutError, type Context, type DurablePromise } from './engine';
import { queryPrometheus, type AnalysisResult } from './analysis';
import type { OutboundPolicy } from './outbound';
import { evaluateProgress } from './progress';
import { ms, type Analysis, type CanaryStrategy } from './strategy';
import { canarySplit, environmentHostname, lockTraffic, routeAllTo, serves, setTraffic, withdrawTraffic } from './traffic';
import type { WorkflowMetrics } from './metrics';

export interface StrategyDeps {
  sql: Sql;
  apexDomain: string;
  /** Check pace of a hold without Prometheus analysis (krane's reports also wake it). */
  recheckMs: number;
  /** State key of the awakeable that status reports and operator commands resolve. */
  wakeKey: string;
  metrics: WorkflowMetrics;
  /** Where Prometheus queries may go, checked again at each query (names can re-resolve). */
  outbound: OutboundPolicy;
}

export type StrategyOutcome = { status: 'ready' } | { status: 'rolled_back'; reason: string };
type HoldResult = { kind: 'pass' | 'promote' | 'abort' } | { kind: 'fail'; reason: string };

interface Check {
  now: number;
  command: TrafficCommand | null;
  /** An always-on signal failed (a canary instance, or the deployment stopped). */
  failed: string | null;
  /** Instances still coming up, as `region running/wanted`; null when all are ready. */
  notReady: string | null;
  analysis: AnalysisResult | null;
}

/** Where a walk starts: the stable deployment it returns to, and any command already given. */
export interface WalkStart {
  stable: string | null;
  command: TrafficCommand | null;
}

/** The canary's steps, once its instances are ready; `start` is the journaled startWalk. */
export async function runCanary(ctx: Context, deps: StrategyDeps, id: string, environmentId: string, strategy: CanaryStrategy, start: WalkStart): Promise<StrategyOutcome> {
  if (start.command === 'abort') return rollBack(ctx, deps, id, environmentId, start.stable, 'aborted by operator');
  if (start.stable) {
    for (const [i, step] of strategy.steps.entries()) {
      await ctx.runTx(`canary-step-${i}`, async (tx) => {
        assertOwnTable(await lockTraffic(tx, environmentId, deps.apexDomain), environmentId, id, start.stable);
        await setTraffic(tx, environmentId, deps.apexDomain, canarySplit(start.stable!, id, step.weight));
        return null;
      });
      const r = await hold(ctx, deps, id, `${i}`, ms(step.pause), strategy.analysis);
      if (r.kind === 'fail') return rollBack(ctx, deps, id, environmentId, start.stable, r.reason);
      if (r.kind === 'abort') return rollBack(ctx, deps, id, environmentId, start.stable, 'aborted by operator');
      if (r.kind === 'promote') break;
    }
  }
  await ctx.runTx('canary-complete', (tx) => completeSwitch(tx, deps, id, environmentId, start.stable));
  return { status: 'ready' };
}

/**
 * The first step of a canary or blue-green, before its instances are waited for: the stable
 * deployment (the one other deployment with traffic, running and ready), and the new one in the
 * table at weight 0. Without such a stable the walk has nothing to split with or return to.
 */
export async function startWalk(tx: TxSql, deps: StrategyDeps, id: string, environmentId: string): Promise<WalkStart> {
  const table = await lockTraffic(tx, environmentId, deps.apexDomain);
  const d = await deployments.lockDeployment(tx, id);
  if (d?.desiredState === 'stopped') throw new TerminalError('stopped before it became ready', { code: 'ERR_DEPLOY_STOPPED' });
  const command = (await deployments.getDeployment(tx, id))?.trafficCommand ?? null;
  const others = table.filter((b) => b.deploymentId !== id);
  const states = new Map((await deployments.runStates(tx, others.map((b) => b.deploymentId))).map((s) => [s.id, s]));
  // A stopped deployment moves no traffic (a table from before stops withdrew it may still name one).
  const live = others.filter((b) => states.get(b.deploymentId)?.desiredState === 'running');
  // Two walks in one environment would each rewrite the table from their own view of it; a
  // table with more than one other live backend means another canary or blue-green is under way.
  if (live.length > 1) {
    throw new TerminalError(`another canary or blue-green is moving traffic in environment ${environmentId} (${live.map((b) => b.deploymentId).join(', ')}); deploy again when it ends`, {
      code: 'ERR_DEPLOYMENT_STATE_CONFLICT',
    });
  }
  // The stable is where an abort or a failing gate sends everything back: it must be serving.
  const top = live[0];
  const stable = top && top.weight > 0 && serves(states.get(top.deploymentId)) ? top.deploymentId : null;
  if (stable && command !== 'abort') await setTraffic(tx, environmentId, deps.apexDomain, canarySplit(stable, id, 0));
  return { stable, command };
}

/**
 * Holds traffic where it is for `pauseMs`, checking every interval. Shared by canary steps and
 * blue-green's analysis; `label` keeps the journal's step names unique per hold.
 */
export async function hold(ctx: Context, deps: StrategyDeps, id: string, label: string, pauseMs: number, analysis: Analysis | undefined): Promise<HoldResult> {
  const deadline = await ctx.run(`hold-${label}`, () => Date.now() + pauseMs);
  const awk = ctx.awakeable<void>();
  await ctx.set(deps.wakeKey, awk.id);
  try {
    return await holdUntil(ctx, deps, id, label, deadline, analysis, awk);
  } finally {
    // A wake-up after the hold must find nothing to resolve, not a stale awakeable.
    await ctx.clear(deps.wakeKey);
  }
}

async function holdUntil(
  ctx: Context,
  deps: StrategyDeps,
  id: string,
  label: string,
  deadline: number,
  analysis: Analysis | undefined,
  first: { id: string; promise: DurablePromise<void> },
): Promise<HoldResult> {
  const interval = analysis ? ms(analysis.interval) : deps.recheckMs;
  let awk = first;
  let failures = 0;
  let lastInconclusive: string | null = null;
  // Reports wake a hold early to look at krane's signals; Prometheus keeps its own pace (one
  // query per interval), so a chatty cluster neither floods it nor spends failureLimit early.
  let nextQueryAt = 0;
  for (let k = 0; ; k++) {
    const due = nextQueryAt;
    const c = await ctx.run(`check-${label}-${k}`, () => checkSignals(deps, id, analysis, due));
    if (c.analysis) nextQueryAt = c.now + interval;
    if (c.command === 'abort') return { kind: 'abort' };
    if (c.failed) return { kind: 'fail', reason: c.failed };
    if (c.analysis?.verdict === 'fail' && ++failures >= (analysis?.failureLimit ?? 1)) return { kind: 'fail', reason: `analysis failed: ${c.analysis.reason}` };
    lastInconclusive = c.analysis?.verdict === 'inconclusive' ? c.analysis.reason : c.analysis ? null : lastInconclusive;
    if (c.command === 'promote') return { kind: 'promote' };
    if (c.now >= deadline) {
      if (c.notReady) return { kind: 'fail', reason: `not ready within the step: ${c.notReady}` };
      if (lastInconclusive) return { kind: 'fail', reason: `analysis inconclusive when the step ended (${lastInconclusive})` };
      return { kind: 'pass' };
    }
    try {
      await awk.promise.orTimeout(Math.max(1, Math.min(interval, deadline - c.now)));
    } catch (err) {
      if (!(err instanceof TimeoutError)) throw err;
      continue;
    }
    awk = ctx.awakeable<void>();
    await ctx.set(deps.wakeKey, awk.id);
  }
}

async function checkSignals(deps: StrategyDeps, id: string, analysis: Analysis | undefined, queryDueAt: number): Promise<Check> {
  const d = await deployments.getDeployment(deps.sql, id);
  const progress = evaluateProgress(await deployments.deploymentProgress(deps.sql, id), d?.desiredState ?? 'stopped');
  const failed = progress.state === 'failed' ? `canary instance failed in ${progress.reason}` : progress.state === 'stopped' ? 'stopped by operator' : null;
  deps.metrics.analysed('instances', failed ? 'fail' : progress.state === 'waiting' ? 'inconclusive' : 'pass');
  const result = analysis?.prometheus && !failed && Date.now() >= queryDueAt ? await queryPrometheus(analysis.prometheus, deps.outbound) : null;
  if (result) {
    deps.metrics.analysed('prometheus', result.verdict);
    const { min, max } = analysis!.prometheus!;
    await events.publishEvent(deps.sql, {
      type: 'deployment.analysis',
      deploymentId: id,
      region: null,
      signal: 'prometheus',
      verdict: result.verdict,
      value: result.value,
      reason: result.reason,
      ...(min !== undefined ? { min } : {}),
      ...(max !== undefined ? { max } : {}),
    });
  }
  return { now: Date.now(), command: d?.trafficCommand ?? null, failed, notReady: progress.state === 'waiting' ? progress.waitingFor.join(', ') : null, analysis: result };
}

export async function rollBack(ctx: Context, deps: StrategyDeps, id: string, environmentId: string, stable: string | null, reason: string): Promise<StrategyOutcome> {
  await ctx.runTx('rollback', async (tx) => {
    const table = await lockTraffic(tx, environmentId, deps.apexDomain);
    await deployments.lockDeployment(tx, id);
    const back = stable && isOwnTable(table, id, stable) && serves((await deployments.runStates(tx, [stable]))[0]);
    if (back) await setTraffic(tx, environmentId, deps.apexDomain, [{ deploymentId: stable, weight: 100 }]);
    // Otherwise stopping the canary gives its share to whatever may serve, never to a stopped stable.
    const row = await stopDeployment(tx, deps, environmentId, id, 'rolled_back', reason);
    if (row) deps.metrics.finished('rolled_back', row.createdAt);
    return null;
  });
  return { status: 'rolled_back', reason };
}

/**
 * 100% to the new deployment, its domains, `ready`, and (with `stopStable`) the previous
 * deployment stopped; blue-green stops it later, after its scale-down delay.
 */
export async function completeSwitch(tx: TxSql, deps: StrategyDeps, id: string, environmentId: string, stable: string | null, stopStable = true): Promise<null> {
  const table = await lockTraffic(tx, environmentId, deps.apexDomain);
  const d = await deployments.lockDeployment(tx, id);
  if (d?.desiredState === 'stopped') throw new TerminalError('stopped before it became ready', { code: 'ERR_DEPLOY_STOPPED' });
  assertOwnTable(table, environmentId, id, stable);
  const env = (await tenancy.getEnvironment(tx, environmentId))!;
  const base = { workspaceId: env.workspaceId, environmentId, deploymentId: id };
  await domains.assignDomain(tx, { ...base, hostname: `${id}.${deps.apexDomain}`, kind: 'deployment' });
  await domains.assignDomain(tx, { ...base, hostname: environmentHostname(env, deps.apexDomain), kind: 'environment' });
  await routeAllTo(tx, environmentId, deps.apexDomain, id);
  await deployments.clearTrafficCommand(tx, id);
  const row = await deployments.setDeploymentStatus(tx, id, 'ready');
  if (row) deps.metrics.finished('ready', row.createdAt);
  if (stable && stopStable) await stopDeployment(tx, deps, environmentId, stable, 'stopped', null);
  return null;
}

const foreignIn = (table: Backend[], id: string, stable: string | null) => table.filter((b) => b.deploymentId !== id && b.deploymentId !== stable && b.weight > 0);
const isOwnTable = (table: Backend[], id: string, stable: string | null) => foreignIn(table, id, stable).length === 0;

/**
 * Checks the (locked) routing table still holds only this walk's deployments. A rolling
 * deploy that became ready, or a promote of a third deployment, moved traffic meanwhile: the
 * walk must not write its view of the table over that, so it ends instead (the deploy's cleanup
 * stops the canary and takes back any share it still has).
 */
function assertOwnTable(table: Backend[], environmentId: string, id: string, stable: string | null): void {
  const foreign = foreignIn(table, id, stable);
  if (foreign.length > 0) {
    throw new TerminalError(`traffic of environment ${environmentId} was moved to ${foreign.map((b) => b.deploymentId).join(', ')} while this deployment was shifting it`, {
      code: 'ERR_DEPLOYMENT_STATE_CONFLICT',
    });
  }
}

/**
 * Stops a deployment's workloads everywhere, takes its traffic away and ends it in `status`. The
 * caller holds the environment's traffic lock (traffic.ts): the withdrawal comes first so the
 * deployment's row is locked after the table, as the lock order says.
 */
export async function stopDeployment(
  tx: TxSql,
  deps: Pick<StrategyDeps, 'apexDomain'>,
  environmentId: string,
  id: string,
  status: 'stopped' | 'rolled_back',
  reason: string | null,
): Promise<Deployment | undefined> {
  await withdrawTraffic(tx, deps.apexDomain, environmentId, id);
  await deployments.clearTrafficCommand(tx, id);
  await deployments.setDeploymentDesiredState(tx, id, 'stopped');
  await topology.setTopologyStatus(tx, id, 'stopped');
  await instances.deleteInstancesOf(tx, id);
  return deployments.setDeploymentStatus(tx, id, status, reason);
}
