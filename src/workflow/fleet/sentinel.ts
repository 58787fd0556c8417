// SentinelService: a virtual object keyed by sentinel id (seed 000). `deploy` changes a
// sentinel's desired config and waits until krane reports it converged, or reports that the
// cluster refused it (then FAILED at once, with krane's reason); calls for one sentinel
// run one at a time. `notifyReady` is shared, so the status-report path reaches a `deploy` that
// is suspended on its awakeable.
import { z } from 'zod';
import { defineObject, handler, TerminalError, TimeoutError } from '../engine';
import { applyFailures, events, sentinels, type Sql } from '../../store';
import { notifyHandler, openWaiter } from '../deploy/wait';
import { sentinelSpecHash } from '../../sync/wire';
import type { OfflineCheck } from '../regions';
import type { Sentinel, SentinelDesired } from '../../store/sentinels';
import { annotate, fail } from '../../tracing';

export const SENTINEL_SERVICE = 'SentinelService';
/** State key holding the awakeable a suspended deploy waits on. */
export const NOTIFY_READY_KEY = 'notify_ready_awakeable';

export const SentinelDeployInput = z.object({
  image: z.string().min(1).optional(),
  replicas: z.number().int().min(0).max(100).optional(),
  cpuMillicores: z.number().int().min(0).optional(),
  memoryMib: z.number().int().min(0).optional(),
});
export type SentinelDeployInput = z.infer<typeof SentinelDeployInput>;

export const SentinelDeployOutput = z.object({
  sentinelId: z.string(),
  status: z.enum(['READY', 'FAILED']),
  image: z.string(),
  reason: z.string().optional(),
});
export type SentinelDeployOutput = z.infer<typeof SentinelDeployOutput>;

/** Merge semantics of the seed: absent or zero fields keep the current value. */
export function mergeSentinelConfig(current: SentinelDesired, req: SentinelDeployInput): SentinelDesired {
  return {
    image: req.image || current.image,
    replicas: req.replicas || current.replicas,
    cpuMillicores: req.cpuMillicores || current.cpuMillicores,
    memoryMib: req.memoryMib || current.memoryMib,
    desiredState: current.desiredState,
  };
}

export function sameConfig(a: SentinelDesired, b: SentinelDesired): boolean {
  return a.image === b.image && a.replicas === b.replicas && a.cpuMillicores === b.cpuMillicores && a.memoryMib === b.memoryMib;
}

/**
 * Converged: krane reports that the Deployment it sees fully rolled out carries the spec hash of
 * exactly the desired fields, healthy, with every desired replica updated and available. Image,
 * health and counts alone would accept the old pods of a cpu-only change that krane never
 * applied (krane stopped); the hash is computed from the desired fields on both sides.
 */
export function sentinelConverged(
  s: Pick<Sentinel, 'image' | 'replicas' | 'cpuMillicores' | 'memoryMib' | 'runningImage' | 'health' | 'updatedReplicas' | 'availableReplicas' | 'observedSpecHash'>,
): boolean {
  return (
    s.observedSpecHash === sentinelSpecHash(s) &&
    s.runningImage === s.image &&
    s.health === 'healthy' &&
    s.updatedReplicas >= s.replicas &&
    s.availableReplicas >= s.replicas
  );
}

export interface SentinelServiceDeps {
  sql: Sql;
  /** How long deploy waits for convergence before failing (seed: 10 minutes). */
  timeoutMs: number;
  /** Backstop re-check while waiting, in case a wake-up was lost. */
  recheckMs: number;
  /** Ends the wait when the sentinel's region stays offline past the grace (src/workflow/regions.ts). */
  offline?: OfflineCheck;
}

export function sentinelService(deps: SentinelServiceDeps) {
  return defineObject(SENTINEL_SERVICE, {
    exclusive: {
      deploy: handler({ input: SentinelDeployInput, output: SentinelDeployOutput }, async (ctx, req) => {
        const id = ctx.key;
        const plan = await ctx.run('plan', async () => {
          const cur = await sentinels.getSentinel(deps.sql, id);
          if (!cur) throw new TerminalError(`sentinel ${id} not found`, { code: 'ERR_SENTINEL_NOT_FOUND' });
          const merged = mergeSentinelConfig(cur, req);
          const ready = sameConfig(cur, merged) && sentinelConverged(cur);
          return { merged, ready, region: cur.region };
        });
        // The durable span sentinel.deploy, when the caller planned one (a deploy, a rollout wave, the API).
        annotate({ 'sentinel.id': id, region: plan.region, 'sentinel.image': plan.merged.image });
        if (plan.ready) return { sentinelId: id, status: 'READY' as const, image: plan.merged.image };

        // The waiter's awakeable exists and is findable before the write, so a convergence
        // reported the moment krane applies the change cannot be missed.
        const waiter = await openWaiter(ctx, NOTIFY_READY_KEY);
        let outcome: 'ready' | 'failed' = 'failed';
        let reason: string | undefined;
        try {
          await ctx.runTx('write', async (tx) => {
            const row = await sentinels.updateSentinelDesired(tx, id, plan.merged, 'progressing');
            if (row) await publishSentinel(tx, row);
          });
          const refused = await waiter.until({
            timeoutMs: deps.timeoutMs,
            recheckMs: deps.recheckMs,
            probe: async () => {
              const cur = await sentinels.getSentinel(deps.sql, id);
              if (cur && sentinelConverged(cur)) return { done: true, info: null };
              return { done: !!cur && cur.deployStatus === 'failed', info: cur ? await refusal(deps.sql, cur) : null };
            },
            onTimeout: () => new TimeoutError(`sentinel did not converge within ${Math.round(deps.timeoutMs / 1000)} s`),
            // An offline region is answered like a timeout: FAILED with the reason.
            ...(deps.offline ? { offline: async (startedAt: number) => (await deps.offline!([plan.region], startedAt)).reason, onOffline: (reason: string) => new TimeoutError(reason) } : {}),
          });
          if (refused !== null) throw new TimeoutError(refused);
          outcome = 'ready';
        } catch (err) {
          // A timeout is an answer (FAILED); cancellation and errors end the invocation, after
          // the finally below has recorded the failure on the row.
          if (!(err instanceof TimeoutError)) throw err;
          reason = err.message;
        } finally {
          await ctx.runTx('finish', async (tx) => {
            await sentinels.setSentinelDeployStatus(tx, id, outcome);
            const row = await sentinels.getSentinel(tx, id);
            if (row) await publishSentinel(tx, row);
          });
        }
        if (outcome === 'ready') return { sentinelId: id, status: 'READY' as const, image: plan.merged.image };
        fail(reason ?? 'failed');
        return { sentinelId: id, status: 'FAILED' as const, image: plan.merged.image, ...(reason ? { reason } : {}) };
      }),
    },
    shared: {
      notifyReady: notifyHandler(NOTIFY_READY_KEY),
    },
  });
}

export type SentinelServiceDef = ReturnType<typeof sentinelService>;

/**
 * Why the wait is over although the sentinel did not converge: Kubernetes refused its desired
 * state (krane reported the apply `failed`, which marks a progressing deploy `failed`:
 * store/sentinels.ts#markSentinelApplyFailed). No pod will ever come, so waiting out the timeout
 * only delays the answer (issue 23). Null while it is still converging.
 */
async function refusal(sql: Sql, s: Sentinel): Promise<string | null> {
  if (s.deployStatus !== 'failed') return null;
  const f = (await applyFailures.listApplyFailures(sql, 'sentinel', s.id)).find((x) => x.region === s.region);
  return `krane could not apply it in ${s.region}: ${f ? `${f.code}: ${f.reason}` : 'the cluster refused it'}`;
}

async function publishSentinel(tx: Parameters<typeof events.publishEvent>[0], row: Sentinel): Promise<void> {
  await events.publishEvent(tx, {
    type: 'sentinel.status',
    sentinelId: row.id,
    region: row.region,
    deployStatus: row.deployStatus,
    health: row.health,
    runningImage: row.runningImage,
  });
}
