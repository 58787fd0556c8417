// The canary strategy (issue 13), run by DeployService once the new version's instances are
// ready in every target region. Traffic moves in journaled steps (walk.ts, traffic.ts):
//
//   traffic-start: the canary joins the routing table at weight 0 beside the stable deployment
//   (the one serving the environment, running and ready); per step: set the weight, then hold
//   for the pause, checking the signals every interval; finally 100% canary and the stable
//   deployment stopped, in one transaction. Without a stable deployment (the environment's
//   first, or its last one was stopped) it is a rolling deploy.
//
// Signals: krane's reports always (a failed canary instance fails at once; instances not all
// ready when a step's pause ends fail it), Prometheus when the strategy has analysis
// (src/workflow/judgement.ts, a threshold or a comparison with the stable: `failureLimit` failed
// checks fail it; inconclusive when the step ends fails closed; promoteEarly may end a step
// early), and an operator's promote (skip to 100%) or abort. A failure rolls
// back: 100% to the stable deployment in one change, the canary stopped, status `rolled_back`
// with the reason. A table someone else changed ends the walk `failed` (walk.ts). Each check is
// one journaled step, so a ctrl crash resumes the walk where the journal ends, with the same
// deadlines. Status reports wake a hold early (the deploy's instances awakeable), so a crash
// loop rolls back in about one report, not one interval.
import { deployments, routes } from '../store';
import type { Backend } from '../store/routes';
import type { TrafficCommand } from '../store/deployments';
import { TimeoutError, type Context, type DurablePromise } from './engine';
import { judgeAnalysis, type Judgement } from './judgement';
import { evaluateProgress } from './progress';
import { ms, type Analysis, type CanaryStrategy } from './strategy';
import { canarySplit, sameTable, setTraffic } from './traffic';
import { completeSwitch, expectTable, rollBack, tableChanged, type StrategyDeps, type StrategyOutcome, type Walk } from './walk';

type HoldResult = { kind: 'pass' | 'promote' | 'abort' } | { kind: 'fail'; reason: string } | { kind: 'changed'; found: Backend[] };

interface Check {
  now: number;
  command: TrafficCommand | null;
  /** An always-on signal failed (a canary instance, or the deployment stopped). */
  failed: string | null;
  /** Instances still coming up, as `region running/wanted`; null when all are ready. */
  notReady: string | null;
  analysis: Judgement | null;
  /** The routing table when it is no longer the one the walk last wrote (walk.ts); else null. */
  changed?: Backend[] | null;
}

/** The canary's steps, once its instances are ready; `walk` starts as startWalk left it. */
export async function runCanary(ctx: Context, deps: StrategyDeps, start: Walk, strategy: CanaryStrategy, command: TrafficCommand | null): Promise<StrategyOutcome> {
  let walk = start;
  if (command === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
  if (walk.stable) {
    for (const [i, step] of strategy.steps.entries()) {
      const before = walk;
      const next = canarySplit(before.stable!, before.id, step.weight);
      await ctx.runTx(`canary-step-${i}`, async (tx) => {
        await expectTable(tx, deps, before);
        await setTraffic(tx, before.environmentId, deps.apexDomain, next);
        return null;
      });
      walk = { ...before, expected: next };
      const r = await hold(ctx, deps, walk, `${i}`, ms(step.pause), strategy.analysis);
      if (r.kind === 'fail') return rollBack(ctx, deps, walk, r.reason);
      if (r.kind === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
      if (r.kind === 'changed') throw tableChanged(walk, r.found);
      if (r.kind === 'promote') break;
    }
  }
  const last = walk;
  await ctx.runTx('canary-complete', (tx) => completeSwitch(tx, deps, last));
  return { status: 'ready' };
}

/**
 * Holds traffic where it is for `pauseMs`, checking every interval. Shared by canary steps and
 * blue-green's analysis; `label` keeps the journal's step names unique per hold.
 */
export async function hold(ctx: Context, deps: StrategyDeps, walk: Walk, label: string, pauseMs: number, analysis: Analysis | undefined): Promise<HoldResult> {
  const deadline = await ctx.run(`hold-${label}`, () => Date.now() + pauseMs);
  const awk = ctx.awakeable<void>();
  await ctx.set(deps.wakeKey, awk.id);
  try {
    return await holdUntil(ctx, deps, walk, label, deadline, analysis, awk);
  } finally {
    // A wake-up after the hold must find nothing to resolve, not a stale awakeable.
    await ctx.clear(deps.wakeKey);
  }
}

async function holdUntil(
  ctx: Context,
  deps: StrategyDeps,
  walk: Walk,
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
    const c = await ctx.run(`check-${label}-${k}`, () => checkSignals(deps, walk, analysis, due));
    if (c.analysis) nextQueryAt = c.now + interval;
    if (c.command === 'abort') return { kind: 'abort' };
    if (c.failed) return { kind: 'fail', reason: c.failed };
    if (c.changed) return { kind: 'changed', found: c.changed };
    if (c.analysis?.verdict === 'fail' && ++failures >= (analysis?.failureLimit ?? 1)) return { kind: 'fail', reason: `analysis failed: ${c.analysis.reason}` };
    lastInconclusive = c.analysis?.verdict === 'inconclusive' ? c.analysis.reason : c.analysis ? null : lastInconclusive;
    if (c.command === 'promote') return { kind: 'promote' };
    // promoteEarly: the canary is shown within tolerance, so the rest of the pause adds nothing.
    if (c.analysis?.early && !c.notReady) return { kind: 'pass' };
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

async function checkSignals(deps: StrategyDeps, walk: Walk, analysis: Analysis | undefined, queryDueAt: number): Promise<Check> {
  const id = walk.id;
  const d = await deployments.getDeployment(deps.sql, id);
  // A read, not a lock: a change seen here is final (only the walk writes the table it expects).
  const table = walk.expected ? ((await routes.getRoutes(deps.sql, walk.environmentId))?.backends ?? []) : null;
  const changed = table && !sameTable(table, walk.expected!) ? table : null;
  const progress = evaluateProgress(await deployments.deploymentProgress(deps.sql, id), d?.desiredState ?? 'stopped');
  const failed = progress.state === 'failed' ? `canary instance failed in ${progress.reason}` : progress.state === 'stopped' ? 'stopped by operator' : null;
  deps.metrics.analysed('instances', failed ? 'fail' : progress.state === 'waiting' ? 'inconclusive' : 'pass');
  const result = analysis && !failed && Date.now() >= queryDueAt ? await judgeAnalysis(deps, { deploymentId: id, stableId: walk.stable, regions: d?.regions ?? [] }, analysis) : null;
  const notReady = progress.state === 'waiting' ? progress.waitingFor.join(', ') : null;
  return { now: Date.now(), command: d?.trafficCommand ?? null, failed, notReady, analysis: result, changed };
}
