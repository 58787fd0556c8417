// DeployService: a virtual object keyed by deployment id that takes a deployment from pending
// to ready (DESIGN section 7, seed 001). Every database step is a runTx, so its state rows,
// outbox rows and journal entry commit together: a crash and replay never writes twice.
//
//   pending → building (only with a build context) → deploying (topologies + outbox per region,
//   sentinel + gossip policy per region, SentinelService.deploy on each it created, then wait
//   for instances) → network (domains) → ready; or failed with the reason, after stopping the
//   topologies (krane deletes the workloads and reports the pods gone, which removes their
//   instance rows: ctrl never deletes an observation itself). The database steps' bodies are
//   in steps.ts, the build's in build-step.ts.
//
// Waiting for instances: an awakeable is created and stored under INSTANCES_KEY before the
// first check; the status-report path sends `notifyInstances` (shared) when the deployment's
// instances are all running or any failed. A periodic re-check backs it up, and a deadline
// fails the deploy. A stop during the wait also notifies, and the deploy ends `stopped`.
//
// Tracing (seed 001): the invocation's durable span is deployment.workflow (planned by
// createDeployment); deployment.build, deployment.topology.create, deployment.events.emit (the
// outbox rows, so krane's deployment.apply.<region> are its children) and one
// deployment.status.poll per check are opened inside step bodies, so a replay emits none again.
import { z } from 'zod';
import { defineObject, handler, TerminalError, TimeoutError, CancelledError, type Context, type DurablePromise } from '../engine';
import { deployments, type Sql } from '../../store';
import type { Builder } from './build';
import { buildImage } from './build-step';
import { cleanUp, createTopologies, ensureSentinels, markReady, STOPPED } from './steps';
import type { SentinelDeployOutput, SentinelServiceDef } from '../fleet/sentinel';
import { evaluateProgress, type Progress } from './progress';
import { notifyHandler, openWaiter } from './wait';
import type { WorkflowMetrics } from '../metrics';
import { NO_OUTBOUND_ALLOW, type OutboundPolicy } from '../outbound/policy';
import type { OfflineCheck } from '../regions';
import { annotate, fail, planSpan, recordError, withSpan } from '../../tracing';
import { runCanary } from '../progressive/canary';
import { rollBack, startWalk, walkOf, type StrategyDeps, type StrategyOutcome } from '../progressive/walk';
import { runBlueGreen } from '../progressive/blue-green';
import type { ScaleDownServiceDef } from '../progressive/scale-down';
import { strategyOf, type Strategy } from '../progressive/strategy';
import { ALL_FEATURES, disabledFeature, requiredFeatures, workspaceFeatures, type Feature } from './features';

export const DEPLOY_SERVICE = 'DeployService';
export const INSTANCES_KEY = 'instances_awakeable';

export interface DeployDeps {
  sql: Sql;
  builder: Builder;
  sentinel: SentinelServiceDef;
  /** Blue-green's delayed scale-down of the deployment it switched from (progressive/scale-down.ts). */
  scaleDown: ScaleDownServiceDef;
  /** Overall limit for instances to come up (DESIGN: default 5 minutes). */
  timeoutMs: number;
  /** Backstop re-check while waiting, in case a notification was lost. */
  recheckMs: number;
  apexDomain: string;
  /** Desired config of sentinels this workflow creates. */
  sentinelDefaults: { image: string; replicas: number; cpuMillicores: number; memoryMib: number };
  metrics: WorkflowMetrics;
  /** Ends the wait when a region stays offline past the grace (src/workflow/regions.ts). */
  offline?: OfflineCheck;
  /** Where a canary's Prometheus queries may go (the policy Slack webhooks follow). */
  outbound?: OutboundPolicy;
  /** Flags of workspaces that never set theirs (--default-features); absent: all on. */
  defaultFeatures?: readonly Feature[] | undefined;
}

export const DeployInput = z
  .object({
    /** A start after a stop: bring the instances back, but leave the environment's domain where
     *  it is (it may have been promoted elsewhere meanwhile). */
    restart: z.boolean().default(false),
  })
  .default({ restart: false });

export const DeployOutput = z.object({
  deploymentId: z.string(),
  status: z.enum(['ready', 'failed', 'stopped', 'rolled_back']),
  error: z.string().nullable(),
});
export type DeployOutput = z.infer<typeof DeployOutput>;

const TERMINAL_STATUSES = new Set(['ready', 'failed', 'stopped', 'superseded', 'rolled_back']);

// Over 80 lines: the workflow's steps in the order its journal replays them; moved into
// helpers, that order (which an upgrade must keep) would no longer be read in one place.
export function deployService(deps: DeployDeps) {
  const { sql } = deps;
  return defineObject(DEPLOY_SERVICE, {
    exclusive: {
      // Over 80 lines on purpose: its journaled steps, in this order, are what a replay must
      // meet; read in one place, a reordering shows.
      deploy: handler({ input: DeployInput, output: DeployOutput }, async (ctx, input) => {
        const id = ctx.key;
        const d = await ctx.run('load', async () => {
          const row = await deployments.getDeployment(sql, id);
          if (!row) throw new TerminalError(`deployment ${id} not found`, { code: 'ERR_DEPLOY_NOT_FOUND' });
          // The workspace's flags are read here and journaled with the row: a replay decides as
          // the first run did, whatever the flags are by then.
          const features = await workspaceFeatures(sql, row.workspaceId, deps.defaultFeatures ?? ALL_FEATURES);
          const autoscaling = row.autoscaling ?? null;
          const off = disabledFeature(features, requiredFeatures({ regions: row.regions, strategy: row.strategy, autoscaling })) ?? null;
          return { status: row.status, image: row.image, buildContext: row.buildContext, regions: row.regions, replicas: row.replicas, environmentId: row.environmentId, strategy: row.strategy ?? null, workspaceId: row.workspaceId, disabledFeature: off, generation: row.desiredGeneration };
        });
        annotate({ 'deployment.id': id, 'environment.id': d.environmentId, 'deployment.regions': d.regions });
        const attributes = { 'deployment.id': id };
        if (TERMINAL_STATUSES.has(d.status)) {
          return { deploymentId: id, status: d.status === 'ready' || d.status === 'stopped' ? d.status : 'failed', error: null } as DeployOutput;
        }
        try {
          // Journals from before flags carry no disabledFeature: they decided without them. A
          // start after a stop is no new deploy: it brings back what was already admitted.
          if (d.disabledFeature && !input.restart) throw new TerminalError(`feature ${d.disabledFeature} is disabled for workspace ${d.workspaceId}`, { code: 'ERR_FEATURE_DISABLED' });
          // A start after a stop brings instances back as they were: no traffic walk again. Nor
          // does a first run that began after a stop and a start: walks happen only under a
          // deployment's first desired-state generation (store: requestTrafficCommand).
          const strategy = strategyOf(d.strategy);
          const resumed = input.restart || (strategy.type !== 'rolling' && (d.generation ?? 0) > 0);
          const walks = strategy.type !== 'rolling' && !resumed;
          // An operator's abort of a walk is honoured in every phase (DESIGN section 11): during
          // the build (build-step.ts), before the topologies (createTopologies), while the
          // sentinels come up (abortableSentinels) and after (walkTraffic). A run whose load step
          // predates generations replays a journal without these reads.
          const abortable = walks && d.generation !== undefined;
          const aborted = async () => walkOutput(id, await rollBack(ctx, strategyDeps(deps, d), walkOf(id, d.environmentId, { stable: null, command: 'abort', table: [] }, d.generation), 'aborted by operator'));
          if (!d.image) {
            await ctx.runTx('status-building', (tx) => deployments.setDeploymentStatus(tx, id, 'building').then(() => null));
            const built = await ctx.run(
              'build',
              () =>
                withSpan('deployment.build', { attributes, childOnly: true }, async () => {
                  const started = Date.now();
                  const image = await buildImage({ sql, builder: deps.builder, deploymentId: id, buildContext: d.buildContext!, abortable });
                  deps.metrics.built((Date.now() - started) / 1000);
                  return image;
                }),
              { maxAttempts: 2 },
            );
            // Journals from before aborts reached the build hold the image alone.
            if (typeof built !== 'string') return await aborted();
            await ctx.runTx('image', (tx) => deployments.setDeploymentImage(tx, id, built).then(() => null));
          }
          if ((await ctx.runTx('topologies', (tx) => createTopologies(tx, id, d, abortable))) === 'aborted') return await aborted();
          const placed = await ctx.runTx('sentinels', (tx) => ensureSentinels(tx, deps, d));
          // Seed 000: a deploy waits for the sentinels it created. An existing one is the
          // environment's, maybe mid-rollout; it is shown on the deployment (its view), not
          // waited for (issue 33). Journals from before hold every id, and waited for each.
          const sentinelIds = Array.isArray(placed) ? (placed as string[]) : placed.created;
          const calls = ctx.all(sentinelIds.map((sid) => planSpan('sentinel.deploy', { 'sentinel.id': sid, 'deployment.id': id }, () => ctx.call(deps.sentinel, 'deploy', {}, { key: sid }))));
          // A run whose load step predates generations replays a journal without the race's
          // entries: it waits for its sentinels as it did (the journal decides, not the code).
          const results = abortable ? await abortableSentinels(ctx, deps, id, calls) : await calls;
          if (results === 'aborted') return await aborted();
          const bad = results.find((r) => r.status !== 'READY');
          if (bad) throw new TerminalError(`sentinel ${bad.sentinelId} not ready: ${bad.reason ?? 'failed'}`, { code: 'ERR_DEPLOY_SENTINEL' });
          if (strategy.type !== 'rolling' && walks) return walkOutput(id, await walkTraffic(ctx, deps, id, d, strategy));
          await waitForInstances(ctx, deps, id, d.regions);

          await ctx.runTx('status-network', (tx) => deployments.setDeploymentStatus(tx, id, 'network').then(() => null));
          await ctx.runTx('domains', (tx) => markReady(tx, deps, id, d.environmentId, resumed));
          return { deploymentId: id, status: 'ready' as const, error: null };
        } catch (err) {
          const reason = err instanceof TimeoutError ? 'timed out waiting for instances' : (err as Error).message;
          const outcome = await ctx.runTx('cleanup', (tx) => cleanUp(tx, deps, id, err, reason, d.generation));
          if (err instanceof CancelledError) throw err;
          // A stop is an answer, not an error; a failure shows on the workflow span.
          if (outcome === 'failed') {
            fail(reason);
            return { deploymentId: id, status: 'failed' as const, error: reason };
          }
          return { deploymentId: id, status: 'stopped' as const, error: null };
        }
      }),
    },
    shared: {
      notifyInstances: notifyHandler(INSTANCES_KEY),
    },
  });
}

export type DeployServiceDef = ReturnType<typeof deployService>;

/**
 * What a canary's or blue-green's end answers. Superseded (a stop and a start came meanwhile):
 * the start's own run decides the rest, so this one answers `stopped`, as cleanUp's requeue does.
 */
function walkOutput(id: string, out: StrategyOutcome): DeployOutput {
  if (out.status === 'rolled_back') {
    fail(out.reason);
    return { deploymentId: id, status: 'rolled_back', error: out.reason };
  }
  return { deploymentId: id, status: out.status === 'ready' ? 'ready' : 'stopped', error: null };
}

/**
 * A canary or blue-green: the new deployment joins the table at weight 0, its instances are
 * waited for, then the strategy walks. Instances that fail (or never come up, or a region that
 * stays offline) before the walk are the strategy's first failing signal, so the deployment ends
 * `rolled_back` like any later one, with the reason; traffic never left the stable deployment.
 * An abort is honoured in every phase: given before the walk began, while the instances start
 * (the wait wakes on it), or before a step (walk.ts#guardStep), so it never gets traffic.
 */
async function walkTraffic(
  ctx: Context,
  deps: DeployDeps,
  id: string,
  d: { environmentId: string; regions: string[]; generation?: number },
  strategy: Exclude<Strategy, { type: 'rolling' }>,
): Promise<StrategyOutcome> {
  const sdeps = strategyDeps(deps, d);
  const start = await ctx.runTx('traffic-start', (tx) => startWalk(tx, sdeps, id, d.environmentId, d.generation));
  const walk = walkOf(id, d.environmentId, start, d.generation);
  // (A run from before generations waited for its instances first: its journal says so.)
  if (start.command === 'abort' && d.generation !== undefined) return rollBack(ctx, sdeps, walk, 'aborted by operator');
  try {
    if ((await waitForInstances(ctx, deps, id, d.regions, { abortable: true })) === 'aborted') return rollBack(ctx, sdeps, walk, 'aborted by operator');
  } catch (err) {
    const signals = ['ERR_DEPLOY_INSTANCES_FAILED', 'ERR_DEPLOY_TIMEOUT', 'ERR_DEPLOY_REGION_OFFLINE'];
    if (!(err instanceof TerminalError) || !signals.includes(err.code ?? '')) throw err;
    const reason = err.code === 'ERR_DEPLOY_INSTANCES_FAILED' ? `canary instance failed in ${err.message}` : err.message;
    return rollBack(ctx, sdeps, walk, reason, err.code === 'ERR_DEPLOY_INSTANCES_FAILED');
  }
  return strategy.type === 'canary' ? runCanary(ctx, sdeps, walk, strategy, start.command) : runBlueGreen(ctx, sdeps, walk, strategy, start.command, deps.scaleDown);
}

const strategyDeps = (deps: DeployDeps, d: { regions: string[] }): StrategyDeps => ({
  sql: deps.sql,
  apexDomain: deps.apexDomain,
  recheckMs: deps.recheckMs,
  wakeKey: INSTANCES_KEY,
  metrics: deps.metrics,
  outbound: deps.outbound ?? NO_OUTBOUND_ALLOW,
  regions: d.regions,
  offline: deps.offline,
});

/**
 * The sentinel calls of a canary or blue-green, raced with the deploy's wake-up awakeable, so
 * an operator's abort (which wakes it) is honoured while the sentinels still come up, not once
 * they are ready. The command is read after the awakeable is stored, so an abort given just
 * before is seen too; other wake-ups (status reports) cost one journaled look at it. The
 * sentinel calls an abort leaves behind finish on their own (a sentinel is the environment's).
 */
async function abortableSentinels(ctx: Context, deps: DeployDeps, id: string, calls: DurablePromise<SentinelDeployOutput[]>): Promise<SentinelDeployOutput[] | 'aborted'> {
  try {
    for (let k = 0; ; k++) {
      const awk = ctx.awakeable<void>();
      await ctx.set(INSTANCES_KEY, awk.id);
      const command = await ctx.run(`sentinels-command-${k}`, async () => (await deployments.getDeployment(deps.sql, id))?.trafficCommand ?? null);
      if (command === 'abort') return 'aborted';
      const first = await ctx.race<SentinelDeployOutput[] | undefined>([calls, awk.promise as DurablePromise<undefined>]);
      if (first) return first;
    }
  } finally {
    await ctx.clear(INSTANCES_KEY);
  }
}

/**
 * Waits until the deployment's instances are ready everywhere (or failed, or it was stopped).
 * `abortable` (a canary's or blue-green's wait): an operator's abort ends the wait too, at once,
 * since the abort's wake-up reaches this wait like a report; it answers 'aborted'.
 */
async function waitForInstances(ctx: Context, deps: DeployDeps, id: string, regions: string[], o: { abortable?: boolean } = {}): Promise<'aborted' | undefined> {
  const waiter = await openWaiter(ctx, INSTANCES_KEY);
  let checks = 0;
  const p = await waiter.until<Progress | { state: 'aborted' }>({
    timeoutMs: deps.timeoutMs,
    recheckMs: deps.recheckMs,
    probe: () =>
      withSpan('deployment.status.poll', { attributes: { 'deployment.id': id }, childOnly: true }, async (span) => {
        checks++;
        const d = await deployments.getDeployment(deps.sql, id);
        if (o.abortable && d?.trafficCommand === 'abort') return { done: true, info: { state: 'aborted' as const } };
        const progress = evaluateProgress(await deployments.deploymentProgress(deps.sql, id), d?.desiredState ?? 'stopped');
        span?.setAttribute('deployment.progress', progress.state);
        // The check that saw instances fail is where the failure shows in the trace.
        if (progress.state === 'failed' && span) recordError(span, progress.reason);
        return { done: progress.state !== 'waiting', info: progress };
      }),
    onTimeout: (last) =>
      new TerminalError(`timed out waiting for instances (${last.state === 'waiting' ? last.waitingFor.join(', ') : last.state})`, { code: 'ERR_DEPLOY_TIMEOUT' }),
    ...(deps.offline
      ? { offline: async (startedAt: number) => (await deps.offline!(regions, startedAt)).reason, onOffline: (reason: string) => new TerminalError(reason, { code: 'ERR_DEPLOY_REGION_OFFLINE' }) }
      : {}),
  });
  // Checks made by this process only: on a resume after a crash the journaled ones are replayed.
  if (checks) deps.metrics.polled(checks);
  if (p.state === 'aborted') return 'aborted';
  if (p.state === 'failed') throw new TerminalError(p.reason, { code: 'ERR_DEPLOY_INSTANCES_FAILED' });
  if (p.state === 'stopped') throw new TerminalError('stopped before it became ready', { code: STOPPED });
  return undefined;
}
