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
// ready when a step's pause ends fail it), the liveness of the target regions (no step ends,
// so nothing is promoted, while one is offline: its instance rows are what krane last said; one
// offline past ctrl's --offline-grace fails the walk, named), the analysis when the strategy has
// one (src/workflow/progressive/judgement.ts: a threshold, or a comparison with the stable, per region;
// with promoteEarly a comparison that shows the canary within tolerance ends a step early), and
// an operator's promote (skip to 100%) or abort.
//
// The analysis is judged over the whole walk, not per step (issue 23): failed checks add up
// across all the steps (blue-green: its whole window), and the `failureLimit`-th fails the walk
// at once. A failing check is never a pass: a step whose last check failed does not end but
// holds on, one check per interval, until a check passes or the limit is reached (so the hold
// is bounded by failureLimit more intervals). A step that ends with its last check inconclusive
// (no data) fails closed. The count is derived from the journaled checks alone, so a ctrl crash
// resumes it exactly. `judgeCheck` is the pure rule; judgement.ts#judgeAnalysis the only judge call.
//
// A failure rolls back: 100% to the stable deployment in one change, the canary stopped, status
// `rolled_back` with the reason. A table someone else changed ends the walk `failed` (walk.ts).
// Each check is one journaled step, so a ctrl crash resumes the walk where the journal ends,
// with the same deadlines. Status reports and operator commands wake a hold early (the deploy's
// instances awakeable), so a crash loop or an abort acts in about one report, not one interval.
import { deployments, routes } from '../../store';
import type { Backend } from '../../store/routes';
import type { TrafficCommand } from '../../store/deployments';
import { TimeoutError, type Context, type DurablePromise } from '../engine';
import type { AnalysisResult } from './analysis';
import { judgeAnalysis, recordEvidence, type Evidence, type Judgement } from './judgement';
import { evaluateProgress } from '../deploy/progress';
import { ms, type Analysis, type CanaryStrategy } from './strategy';
import { canarySplit, sameTable, setTraffic } from './traffic';
import { completeSwitch, guardStep, rollBack, tableChanged, type StrategyDeps, type StrategyOutcome, type Walk } from './walk';

/** A check's `failed` when it saw the deployment stopped: the operator's decision, not a failed
 *  signal (journaled checks carry this text, so it stays as it is). */
export const STOPPED_BY_OPERATOR = 'stopped by operator';

/** `signal`: the canary's own signals failed (its instances, or the analysis reached its
 *  failureLimit): its image is quarantined. Not an offline region, a step not ready in time or
 *  an inconclusive analysis, which say nothing certain about the image. */
export type HoldResult = { kind: 'pass' | 'promote' | 'abort' } | { kind: 'fail'; reason: string; signal?: boolean } | { kind: 'changed'; found: Backend[] };

export interface Check {
  now: number;
  command: TrafficCommand | null;
  /** An always-on signal failed (a canary instance, or the deployment stopped). */
  failed: string | null;
  /** Instances still coming up, as `region running/wanted`; null when all are ready. */
  notReady: string | null;
  analysis: Judgement | null;
  /** The routing table when it is no longer the one the walk last wrote (walk.ts); else null. */
  changed?: Backend[] | null;
  /** Target regions offline now, and why to give up (one offline past the grace); absent in
   *  journals from before holds checked liveness. */
  offline?: { regions: string[]; reason: string | null };
  /** The analysis's evidence, recorded by the check's own evidence step (judgement.ts); absent
   *  in journals from before it had one (their checks recorded it themselves). */
  evidence?: Evidence;
}

/** What the walk's analysis found so far, over all its holds: derived from journaled checks. */
export interface Tally {
  failures: number;
  /** When the walk's first analysed hold began (a journaled deadline less its pause): where a
   *  compare judge's window starts, so its first check already has an interval of data. */
  since?: number;
}

/** What a hold remembers between its checks. */
interface HoldMemory {
  failures: number;
  /** The hold's latest analysis result (checks without a query keep the one before). */
  last: AnalysisResult | null;
}

/**
 * Pure: what one check means for a hold, given what the checks before it found. Returns the
 * updated memory and the hold's end, or null to keep holding (before the deadline; or after it,
 * while a target region is offline or the last analysis check failed). `legacy`: the rule of
 * walks journaled before issue 23 (a failing last check passed), for their replay only.
 */
export function judgeCheck(c: Check, before: HoldMemory, o: { deadline: number; failureLimit: number; legacy?: boolean }): HoldMemory & { end: HoldResult | null } {
  const last = c.analysis ?? before.last;
  const failures = before.failures + (c.analysis?.verdict === 'fail' ? 1 : 0);
  const m = { failures, last };
  const end = (r: HoldResult | null) => ({ ...m, end: r });
  const limit: HoldResult | null =
    c.analysis?.verdict === 'fail' && failures >= o.failureLimit
      ? { kind: 'fail', reason: `analysis failed: ${c.analysis.reason} (${failures} of failureLimit ${o.failureLimit} checks failed)`, signal: true }
      : null;
  // The limit first (issue 33): whatever else this check saw (a table changed by a stop, an
  // abort, a promote), the image failed its analysis, and that verdict is about the image: the
  // walk ends rolled back and the image is quarantined (unless an operator's abort or stop came
  // too: walk.ts#rollBack). Judged after the rest, a changed table ended it `failed` and a stop
  // and start brought the canary back `ready` with every check failed. Legacy walks replay the
  // order they were journaled under.
  if (limit && !o.legacy) return end(limit);
  if (c.command === 'abort') return end({ kind: 'abort' });
  if (c.failed) return end({ kind: 'fail', reason: c.failed, signal: c.failed !== STOPPED_BY_OPERATOR });
  if (c.changed) return end({ kind: 'changed', found: c.changed });
  if (c.offline?.reason) return end({ kind: 'fail', reason: c.offline.reason });
  if (limit) return end(limit);
  // Nothing is promoted into a region that is offline or not ready, by an operator as by the
  // analysis (promoteEarly): the promote stays stored and is taken at the first check that finds
  // every target region online and ready (issue 33; it was taken at once, offline or not).
  const everywhere = !c.notReady && !c.offline?.regions.length;
  if (c.command === 'promote' && (everywhere || o.legacy)) return end({ kind: 'promote' });
  // promoteEarly: every region shown within tolerance, so the rest of the pause adds nothing.
  if (c.analysis?.early && everywhere) return end({ kind: 'pass' });
  if (c.now < o.deadline) return end(null);
  if (c.notReady) return end({ kind: 'fail', reason: `not ready within the step: ${c.notReady}` });
  if (c.offline?.regions.length) return end(null);
  if (last?.verdict === 'inconclusive') return end({ kind: 'fail', reason: `analysis inconclusive when the step ended (${last.reason})` });
  if (last?.verdict === 'fail' && !o.legacy) return end(null);
  return end({ kind: 'pass' });
}

/** The canary's steps, once its instances are ready; `walk` starts as startWalk left it. */
export async function runCanary(ctx: Context, deps: StrategyDeps, start: Walk, strategy: CanaryStrategy, command: TrafficCommand | null): Promise<StrategyOutcome> {
  let walk = start;
  if (command === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
  const tally: Tally = { failures: 0 };
  if (walk.stable) {
    for (const [i, step] of strategy.steps.entries()) {
      const before = walk;
      const next = canarySplit(before.stable!, before.id, step.weight);
      const held = await ctx.runTx(`canary-step-${i}`, async (tx) => {
        const signal = await guardStep(tx, deps, before);
        if (!signal) await setTraffic(tx, before.environmentId, deps.apexDomain, next);
        return signal;
      });
      // Journals from before the guard returned null for a step that was written.
      if (held === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
      if (held === 'stopped') return rollBack(ctx, deps, walk, 'stopped by operator');
      walk = { ...before, expected: next };
      const r = await hold(ctx, deps, walk, `${i}`, ms(step.pause), strategy.analysis, tally);
      if (r.kind === 'fail') return rollBack(ctx, deps, walk, r.reason, r.signal);
      if (r.kind === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
      if (r.kind === 'changed') throw tableChanged(walk, r.found);
      if (r.kind === 'promote') break;
    }
  }
  const last = walk;
  const held = await ctx.runTx('canary-complete', (tx) => completeSwitch(tx, deps, last));
  if (held) return rollBack(ctx, deps, walk, held === 'abort' ? 'aborted by operator' : 'stopped by operator');
  return { status: 'ready' };
}

/**
 * Holds traffic where it is for `pauseMs`, checking every interval. Shared by canary steps and
 * blue-green's analysis; `label` keeps the journal's step names unique per hold; `tally` carries
 * the analysis's failed checks from hold to hold.
 */
export async function hold(ctx: Context, deps: StrategyDeps, walk: Walk, label: string, pauseMs: number, analysis: Analysis | undefined, tally: Tally = { failures: 0 }): Promise<HoldResult> {
  const deadline = await ctx.run(`hold-${label}`, () => Date.now() + pauseMs);
  const awk = ctx.awakeable<void>();
  await ctx.set(deps.wakeKey, awk.id);
  try {
    return await holdUntil(ctx, deps, walk, { label, deadline, startedAt: deadline - pauseMs, analysis, tally }, awk);
  } finally {
    // A wake-up after the hold must find nothing to resolve, not a stale awakeable.
    await ctx.clear(deps.wakeKey);
  }
}

async function holdUntil(
  ctx: Context,
  deps: StrategyDeps,
  walk: Walk,
  h: { label: string; deadline: number; startedAt: number; analysis: Analysis | undefined; tally: Tally },
  first: { id: string; promise: DurablePromise<void> },
): Promise<HoldResult> {
  const { label, deadline, analysis, tally } = h;
  const interval = analysis ? ms(analysis.interval) : deps.recheckMs;
  const failureLimit = analysis?.failureLimit ?? 1;
  let awk = first;
  // A walk journaled before generations (sql/0009) counted per hold and let a failing last
  // check pass: its replay must decide as it did, or the journal no longer matches the code.
  const legacy = walk.generation === undefined;
  let memory: HoldMemory = { failures: legacy ? 0 : tally.failures, last: null };
  // Reports wake a hold early to look at krane's signals; Prometheus keeps its own pace (one
  // query per interval), so a chatty cluster neither floods it nor spends failureLimit early.
  let nextQueryAt = 0;
  // A comparison at the very start of the walk would read an empty window (the canary has had
  // its traffic for no time at all): its first query waits an interval (not past the step's
  // end, so every hold is judged at least once), over a window from the first hold's start.
  if (analysis?.judge === 'compare' && tally.since === undefined) {
    tally.since = h.startedAt;
    nextQueryAt = Math.min(h.startedAt + interval, deadline);
  }
  for (let k = 0; ; k++) {
    const due = nextQueryAt;
    const c = await ctx.run(`check-${label}-${k}`, () => checkSignals(deps, walk, analysis, due, h.startedAt, tally.since));
    // Exactly once, and the evidence the check journaled (judgement.ts says why apart).
    if (c.evidence) await ctx.runTx(`evidence-${label}-${k}`, (tx) => recordEvidence(tx, walk.id, c.evidence!));
    if (c.analysis) nextQueryAt = c.now + interval;
    const judged = judgeCheck(c, memory, { deadline, failureLimit, legacy });
    memory = judged;
    tally.failures = judged.failures;
    if (judged.end) return judged.end;
    // Past the deadline the hold waits for the next query (a failing last check) or the next
    // re-check (an offline region), never spinning on a deadline already gone.
    const wait = c.now < deadline ? Math.min(interval, deadline - c.now) : nextQueryAt > c.now ? nextQueryAt - c.now : interval;
    try {
      await awk.promise.orTimeout(Math.max(1, wait));
    } catch (err) {
      if (!(err instanceof TimeoutError)) throw err;
      continue;
    }
    awk = ctx.awakeable<void>();
    await ctx.set(deps.wakeKey, awk.id);
  }
}

/**
 * One check of a hold, journaled as a whole: the deployment's command and instances, the
 * table, the target regions' liveness, and (when due) the analysis (judgement.ts: threshold or
 * compare, both judged the same way here, judgeCheck). Reads only: it runs at least once, and
 * its evidence is written by the step after it.
 */
export async function checkSignals(deps: StrategyDeps, walk: Walk, analysis: Analysis | undefined, queryDueAt: number, startedAt: number, since?: number): Promise<Check> {
  const id = walk.id;
  const d = await deployments.getDeployment(deps.sql, id);
  // A read, not a lock: a change seen here is final (only the walk writes the table it expects).
  const table = walk.expected ? ((await routes.getRoutes(deps.sql, walk.environmentId))?.backends ?? []) : null;
  const changed = table && !sameTable(table, walk.expected!) ? table : null;
  const progress = evaluateProgress(await deployments.deploymentProgress(deps.sql, id), d?.desiredState ?? 'stopped');
  const failed = progress.state === 'failed' ? `canary instance failed in ${progress.reason}` : progress.state === 'stopped' ? STOPPED_BY_OPERATOR : null;
  deps.metrics.analysed('instances', failed ? 'fail' : progress.state === 'waiting' ? 'inconclusive' : 'pass');
  const offline = deps.offline ? await deps.offline(deps.regions, startedAt) : { offline: [], reason: null };
  // One clock reading decides both whether the query is due and what the check's time is: two
  // could straddle a deadline, and a hold whose only query was due there would pass unjudged.
  const now = Date.now();
  const judged = analysis && !failed && now >= queryDueAt ? await judgeAnalysis(deps, { deploymentId: id, stableId: walk.stable, regions: d?.regions ?? [], ...(since !== undefined ? { since } : {}) }, analysis) : null;
  const notReady = progress.state === 'waiting' ? progress.waitingFor.join(', ') : null;
  const checked = { now, command: d?.trafficCommand ?? null, failed, notReady, analysis: judged?.judgement ?? null, changed, offline: { regions: offline.offline, reason: offline.reason } };
  return judged ? { ...checked, evidence: judged.evidence } : checked;
}
