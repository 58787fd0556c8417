// The blue-green strategy (issue 13), run by DeployService once the new (green) deployment is
// ready everywhere (it joined the routing table at weight 0 before, walk.ts#startWalk): the
// analysis (when given) runs on it before any traffic moves, then all traffic switches in one
// transaction. The old (blue) deployment keeps running for `scaleDownDelay` (a durable sleep), so
// switching back is instant, and is then stopped unless traffic went back to it meanwhile. An
// abort or failed analysis before the switch leaves blue as it was and ends green `rolled_back`;
// a table someone else changed before the switch ends green `failed` (walk.ts).
import type { Context } from '../engine';
import type { TrafficCommand } from '../../store/deployments';
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

export async function runBlueGreen(ctx: Context, deps: StrategyDeps, walk: Walk, strategy: BlueGreen, command: TrafficCommand | null): Promise<StrategyOutcome> {
  const { environmentId, stable: blue } = walk;
  if (command === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
  if (blue) {
    const windowMs = strategy.analysis ? ANALYSIS_CHECKS * ms(strategy.analysis.interval) : 0;
    const r = await hold(ctx, deps, walk, 'bluegreen', windowMs, strategy.analysis);
    if (r.kind === 'fail') return rollBack(ctx, deps, walk, r.reason, r.signal);
    if (r.kind === 'abort') return rollBack(ctx, deps, walk, 'aborted by operator');
    if (r.kind === 'changed') throw tableChanged(walk, r.found);
  }
  // Journals from before the switch's guard returned null for a switch that was made.
  const held = await ctx.runTx('bluegreen-switch', (tx) => completeSwitch(tx, deps, walk, false));
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
