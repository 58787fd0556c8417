// The blue-green strategy (issue 13), run by DeployService once the new (green) deployment is
// ready everywhere (it joined the routing table at weight 0 before, canary.ts#startWalk): the analysis (when given) runs on it
// before any traffic moves, then all traffic switches in one transaction. The old (blue)
// deployment keeps running for `scaleDownDelay` (a durable sleep), so switching back is instant,
// and is then stopped unless traffic went back to it meanwhile. An abort or failed analysis
// before the switch leaves blue as it was and ends green `rolled_back`.
import type { Context } from './engine';
import { completeSwitch, hold, rollBack, stopDeployment, type StrategyDeps, type StrategyOutcome, type WalkStart } from './canary';
import { ms, type Strategy } from './strategy';
import { lockTraffic } from './traffic';

type BlueGreen = Extract<Strategy, { type: 'blue-green' }>;

/**
 * How long the pre-switch analysis watches green: three checks, so one slow scrape cannot decide
 * alone and a query without data fails closed within seconds.
 */
const ANALYSIS_CHECKS = 3;

export async function runBlueGreen(ctx: Context, deps: StrategyDeps, id: string, environmentId: string, strategy: BlueGreen, start: WalkStart): Promise<StrategyOutcome> {
  const blue = start.stable;
  if (start.command === 'abort') return rollBack(ctx, deps, id, environmentId, blue, 'aborted by operator');
  if (blue) {
    const windowMs = strategy.analysis ? ANALYSIS_CHECKS * ms(strategy.analysis.interval) : 0;
    const r = await hold(ctx, deps, id, 'bluegreen', windowMs, strategy.analysis);
    if (r.kind === 'fail') return rollBack(ctx, deps, id, environmentId, blue, r.reason);
    if (r.kind === 'abort') return rollBack(ctx, deps, id, environmentId, blue, 'aborted by operator');
  }
  await ctx.runTx('bluegreen-switch', (tx) => completeSwitch(tx, deps, id, environmentId, blue, false));
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
