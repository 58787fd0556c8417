// The blue-green strategy (issue 13), run by DeployService once the new (green) deployment is
// ready everywhere (it joined the routing table at weight 0 before, walk.ts#startWalk): the
// analysis (when given) runs on it before any traffic moves, then all traffic switches in one
// transaction. The old (blue) deployment keeps running for `scaleDownDelay`, so switching back
// is instant, and is then stopped by a delayed call of its own (scale-down.ts), unless traffic
// went back to it or an operator stopped or started it meanwhile; green's deploy ends `ready` at
// the switch, holding its key no longer. An abort or failed analysis before the switch leaves
// blue as it was and ends green `rolled_back`; a table someone else changed before the switch
// ends green `failed` (walk.ts).
import type { Context } from '../engine';
import type { TrafficCommand } from '../../store/deployments';
import type { TxSql } from '../../store/db';
import { deployments } from '../../store';
import type { ScaleDownServiceDef } from './scale-down';
import { hold } from './canary';
import { completeSwitch, rollBack, stopDeployment, tableChanged, type StrategyDeps, type StrategyOutcome, type Walk } from './walk';
import { ms, type Strategy } from './strategy';
import { lockTraffic } from './traffic';

type BlueGreen = Extract<Strategy, { type: 'blue-green' }>;

/**
 * How long the pre-switch analysis watches green: three checks, so one slow scrape cannot decide
 * alone and a query without data fails closed within seconds. A `failureLimit` above three can
 * still be reached: the window does not end on a failing check (canary.ts#judgeCheck), so green
 * failing every check is held until the limit, never switched to; the window is three intervals
 * plus at most failureLimit more.
 */
const ANALYSIS_CHECKS = 3;

export async function runBlueGreen(
  ctx: Context,
  deps: StrategyDeps,
  walk: Walk,
  strategy: BlueGreen,
  command: TrafficCommand | null,
  scaleDown: ScaleDownServiceDef,
): Promise<StrategyOutcome> {
  const { stable: blue } = walk;
  if (command === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
  if (blue) {
    const windowMs = strategy.analysis ? ANALYSIS_CHECKS * ms(strategy.analysis.interval) : 0;
    const r = await hold(ctx, deps, walk, 'bluegreen', windowMs, strategy.analysis);
    if (r.kind === 'fail') return rollBack(ctx, deps, walk, r.reason, r.signal);
    if (r.kind === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
    if (r.kind === 'changed') throw tableChanged(walk, r.found);
  }
  const switched = await ctx.runTx('bluegreen-switch', (tx) => switchTo(tx, deps, walk));
  // Journals from before issue 33 journaled the guard's answer alone (null for a switch that was
  // made, before the guard existed too) and slept out the delay in this invocation.
  if (switched === null || typeof switched === 'string') return legacyScaleDown(ctx, deps, walk, strategy, switched);
  if (switched.held) return rollBack(ctx, deps, walk, switched.held === 'abort' ? 'aborted by operator' : 'stopped by operator');
  if (blue && switched.blueGeneration !== null) {
    const input = { environmentId: walk.environmentId, generation: switched.blueGeneration, switchedTo: walk.id };
    await ctx.send(scaleDown, 'scaleDown', input, { key: blue, delayMs: ms(strategy.scaleDownDelay), idempotencyKey: `scale-down:${walk.id}` });
  }
  return { status: 'ready' };
}

/** The switch, and blue's desired-state generation at that moment (what its scale-down compares). */
async function switchTo(tx: TxSql, deps: StrategyDeps, walk: Walk): Promise<{ held: 'abort' | 'stopped' | null; blueGeneration: number | null }> {
  const held = await completeSwitch(tx, deps, walk, false);
  if (held || !walk.stable) return { held, blueGeneration: null };
  // After the table and green's row (completeSwitch's guard): the lock order of traffic.ts.
  const blue = await deployments.lockDeployment(tx, walk.stable);
  return { held: null, blueGeneration: blue?.desiredGeneration ?? null };
}

/** A walk journaled before issue 33: it sleeps out the delay here, as it did, and scales down. */
async function legacyScaleDown(ctx: Context, deps: StrategyDeps, walk: Walk, strategy: BlueGreen, held: 'abort' | 'stopped' | null): Promise<StrategyOutcome> {
  const { environmentId, stable: blue } = walk;
  if (held) return rollBack(ctx, deps, walk, held === 'abort' ? 'aborted by operator' : 'stopped by operator');
  if (blue) {
    await ctx.sleep('scale-down-delay', ms(strategy.scaleDownDelay));
    await ctx.runTx('scale-down', async (tx) => {
      // A promote or rollback may have sent traffic back to blue during the delay: keep it then.
      const table = await lockTraffic(tx, environmentId, deps.apexDomain);
      if (!table.some((b) => b.deploymentId === blue && b.weight > 0)) await stopDeployment(tx, deps, environmentId, blue, 'stopped', null);
      return null;
    });
  }
  return { status: 'ready' };
}
