// Blue-green's scale-down (issue 33): the old (blue) deployment is stopped `scaleDownDelay`
// after the switch by a call of its own, ScaleDownService.scaleDown keyed by blue's id, which
// the switching deploy sends delayed (blue-green.ts). Its own call because the delay may be a
// day: slept inside green's deploy it held green's key all that time, so a start of green
// after a stop queued behind it. A delayed exclusive call holds no key while it waits (the
// engine enqueues it on its key only when it is due).
//
// The last accepted command decides: the switch records blue's desired-state generation, and
// the scale-down is skipped when blue's generation has moved since (an operator stopped or
// started it: theirs to decide), when blue carries traffic again (a promote or a stop of green
// gave it back), or when it is stopped already. The decision is pure (scaleDownVerdict) and made
// under the table's lock and blue's row lock, in the one transaction that stops it.
import { z } from 'zod';
import { defineObject, handler } from '../engine';
import { deployments, tenancy, type Sql } from '../../store';
import type { Backend } from '../../store/routes';
import { lockTraffic } from './traffic';
import { stopDeployment } from './walk';

export const SCALE_DOWN_SERVICE = 'ScaleDownService';

export const ScaleDownInput = z.object({
  environmentId: z.string(),
  /** Blue's desired-state generation when green took its traffic. */
  generation: z.number().int(),
  /** The deployment that switched (green), for the log and the answer. */
  switchedTo: z.string(),
});
export const ScaleDownOutput = z.object({ deploymentId: z.string(), stopped: z.boolean(), reason: z.string().nullable() });

export type ScaleDownVerdict = { stop: true } | { stop: false; reason: string };

/** Pure: whether the scale-down stops blue, or why not. */
export function scaleDownVerdict(
  blue: { desiredState: string; desiredGeneration: number } | undefined,
  generationAtSwitch: number,
  table: readonly Backend[],
  id: string,
): ScaleDownVerdict {
  if (!blue) return { stop: false, reason: 'gone' };
  if (blue.desiredGeneration !== generationAtSwitch) return { stop: false, reason: 'a stop or start was accepted since the switch' };
  if (blue.desiredState === 'stopped') return { stop: false, reason: 'stopped already' };
  if (table.some((b) => b.deploymentId === id && b.weight > 0)) return { stop: false, reason: 'it carries traffic again' };
  return { stop: true };
}

export function scaleDownService(deps: { sql: Sql; apexDomain: string }) {
  return defineObject(SCALE_DOWN_SERVICE, {
    exclusive: {
      scaleDown: handler({ input: ScaleDownInput, output: ScaleDownOutput }, async (ctx, input) => {
        const id = ctx.key;
        const verdict = await ctx.runTx('scale-down', async (tx): Promise<ScaleDownVerdict> => {
          // An environment deleted meanwhile had nothing running (a deletion refuses until then).
          if (!(await tenancy.getEnvironment(tx, input.environmentId))) return { stop: false, reason: 'its environment was deleted' };
          // The table's lock, then blue's row (the lock order of traffic.ts).
          const table = await lockTraffic(tx, input.environmentId, deps.apexDomain);
          const v = scaleDownVerdict(await deployments.lockDeployment(tx, id), input.generation, table, id);
          if (v.stop) await stopDeployment(tx, deps, input.environmentId, id, 'stopped', null);
          return v;
        });
        if (!verdict.stop) ctx.logger.info({ deploymentId: id, switchedTo: input.switchedTo, reason: verdict.reason }, 'blue-green scale-down skipped');
        return { deploymentId: id, stopped: verdict.stop, reason: verdict.stop ? null : verdict.reason };
      }),
    },
  });
}

export type ScaleDownServiceDef = ReturnType<typeof scaleDownService>;
