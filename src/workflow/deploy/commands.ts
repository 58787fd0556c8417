// The operations the public API offers on deployments, apart from HTTP: each validates against
// the database, writes in one transaction, and hands the long-running part to a workflow. The
// deploy invocation's idempotency key is derived from the deployment id, so starting it twice
// (a retried request, the recovery sweep) yields one workflow.
import { AppError, notFound, validationError } from '../../errors';
import { newId } from '../../ids';
import type { Logger } from '../../log';
import { deployments, domains, tenancy, withTx, type Sql, type TxSql } from '../../store';
import type { Deployment } from '../../store/deployments';
import type { Engine } from '../engine';
import type { DeployServiceDef } from './deploy';
import type { DesiredStateServiceDef } from './desired-state';
import { resolveBuildContext } from './build';
import { specOf, storedFields, type DeploymentSpec } from './spec';
import { currentTraceparent, planSpan } from '../../tracing';
import { environmentHostname, lockTraffic, routeAllTo } from '../progressive/traffic';
import { strategyOf } from '../progressive/strategy';
import { assertFeatures, assertNotQuarantined, assertVersionFree, resolveRegions, versionTaken } from './admission';
import type { Feature } from './features';
import { versions } from '../../store';
import type { OfflineCheck } from '../regions';
import { claimDeploymentHostname } from './hostnames';

export interface CommandDeps {
  sql: Sql;
  engine: Engine;
  deploy: DeployServiceDef;
  desiredState: DesiredStateServiceDef;
  apexDomain: string;
  /** Build contexts must lie in this directory; absent: this control plane builds nothing. */
  buildRoot?: string | undefined;
  /** Regions of a deploy that names none and whose environment has none (--default-regions). */
  defaultRegions?: readonly string[] | undefined;
  /** Feature flags of workspaces that never chose (--default-features); absent: all on. */
  defaultFeatures?: readonly Feature[] | undefined;
  /** Which regions are offline: a promote into one is refused (src/workflow/regions.ts). */
  offline?: OfflineCheck | undefined;
}

/** What createDeployment takes: the spec (src/workflow/deploy/spec.ts) after validation. */
export type CreateDeploymentInput = DeploymentSpec;

/**
 * A caller's own write that must commit with a command's change (the HTTP layer's audit row):
 * each command calls it in the transaction that makes its change, or in the engine's start
 * transaction when the change is a workflow's. It gets the deployment the command acted on.
 */
export type Alongside = (tx: TxSql, target: { id: string; workspaceId: string; projectId: string; environmentId: string }) => Promise<unknown>;

const targetOf = (d: Pick<Deployment, 'id' | 'workspaceId' | 'projectId' | 'environmentId'>) => ({ id: d.id, workspaceId: d.workspaceId, projectId: d.projectId, environmentId: d.environmentId });

export const deployIdempotencyKey = (deploymentId: string) => `deploy:${deploymentId}`;

export async function startDeployWorkflow(deps: CommandDeps, deploymentId: string): Promise<void> {
  await deps.engine.send(deps.deploy, 'deploy', { restart: false }, { key: deploymentId, idempotencyKey: deployIdempotencyKey(deploymentId) });
}

/** The build context as stored: its real path under the build root, or a 400 naming the field. */
async function checkedBuildContext(deps: CommandDeps, context: string): Promise<string> {
  const bad = (message: string) => validationError('invalid build context', [{ field: 'buildContext', message }]);
  if (!deps.buildRoot) throw bad('this control plane has no build command configured (--build-command); deploy an image instead');
  const r = await resolveBuildContext(deps.buildRoot, context);
  if ('problem' in r) throw bad(r.problem);
  return r.path;
}

export async function createDeployment(deps: CommandDeps, input: CreateDeploymentInput, rolledBackFrom: string | null = null, alongside?: Alongside): Promise<Deployment> {
  const env = await tenancy.getEnvironment(deps.sql, input.environmentId);
  if (!env) throw unknownEnvironment(input.environmentId);
  // Every refusal comes before any write (admission.ts): a refused deploy leaves no row.
  const regions = await resolveRegions(deps.sql, deps, env.id, input.regions);
  await assertFeatures(deps.sql, deps, env.workspaceId, { regions, strategy: input.strategy, autoscaling: input.autoscaling });
  if (input.image) await assertNotQuarantined(deps.sql, env.id, input.image, input.force);
  await assertVersionFree(deps.sql, env.id, input.version);
  const buildContext = input.buildContext ? await checkedBuildContext(deps, input.buildContext) : null;
  const id = newId('dep');
  // The workflow's span is planned here, so the row and the invocation carry its ids from the
  // start; the invocation's end (on whichever replica) emits it.
  const attributes = { 'deployment.id': id, 'environment.id': env.id, 'deployment.regions': regions };
  return planSpan('deployment.workflow', attributes, () => insertAndStart(deps, { id, env, buildContext, input: { ...input, regions }, rolledBackFrom, alongside }));
}

const unknownEnvironment = (id: string) => validationError('unknown environment', [{ field: 'environmentId', message: `environment ${id} not found` }]);

async function insertAndStart(
  deps: CommandDeps,
  a: { id: string; env: tenancy.Environment; buildContext: string | null; input: CreateDeploymentInput & { regions: string[] }; rolledBackFrom: string | null; alongside?: Alongside | undefined },
): Promise<Deployment> {
  const { env, input } = a;
  const d = await withTx(deps.sql, async (tx) => {
    // The checks above read the environment without a lock; a deletion may have committed since.
    if (!(await tenancy.shareEnvironment(tx, env.id))) throw unknownEnvironment(env.id);
    const row = await deployments.insertDeployment(tx, {
      id: a.id,
      workspaceId: env.workspaceId,
      projectId: env.projectId,
      appId: env.appId,
      environmentId: env.id,
      image: input.image ?? null,
      buildContext: a.buildContext,
      ...storedFields(input),
      regions: input.regions,
      // An autoscaled deployment starts at its minimum; the autoscaler moves it from there.
      ...(input.autoscaling ? { replicas: input.autoscaling.minReplicas, autoscaling: input.autoscaling } : {}),
      version: input.version,
      rolledBackFrom: a.rolledBackFrom,
      traceparent: currentTraceparent(),
      strategy: input.strategy.type === 'rolling' ? null : input.strategy,
    });
    await claimDeploymentHostname(tx, deps.apexDomain, row);
    await a.alongside?.(tx, targetOf(row));
    return row;
  }).catch(async (err: unknown) => {
    if (!input.version || !versions.isVersionTaken(err)) throw err;
    throw versionTaken(env.id, input.version, (await versions.versionHolder(deps.sql, env.id, input.version))?.id);
  });
  // If this process dies between the insert and the send, recoverPendingDeployments starts the
  // workflow later with the same idempotency key.
  await startDeployWorkflow(deps, d.id);
  return d;
}

/** Seed 001: a rollback is a new deployment made from an earlier one's spec and image. */
export async function rollbackDeployment(deps: CommandDeps, id: string, opts: { force?: boolean | undefined } = {}, alongside?: Alongside): Promise<Deployment> {
  const old = await deployments.getDeployment(deps.sql, id);
  if (!old) throw notFound('deployment', id);
  return rollbackTo(deps, old, opts, alongside);
}

/** A new deployment from `old`'s config and image; a quarantined image needs `force`. */
export async function rollbackTo(deps: CommandDeps, old: Deployment, opts: { force?: boolean | undefined } = {}, alongside?: Alongside): Promise<Deployment> {
  if (!old.image) throw new AppError('ERR_DEPLOYMENT_NO_IMAGE', `deployment ${old.id} never produced an image; nothing to roll back to`);
  return createDeployment(deps, { ...specOf({ ...old, image: old.image }), ...(opts.force ? { force: true } : {}) }, old.id, alongside);
}

/**
 * Hands a promote or abort to the strategy workflow of a canary or blue-green still on its way:
 * the request is stored, then the workflow is woken to act on it at once (it also reads it at
 * its next check, should the wake-up be lost). False when there is no such workflow.
 */
async function commandStrategy(deps: CommandDeps, d: Deployment, command: deployments.TrafficCommand, alongside?: Alongside): Promise<boolean> {
  const id = d.id;
  const stored = await withTx(deps.sql, async (tx) => {
    if (!(await deployments.requestTrafficCommand(tx, id, command))) return false;
    await alongside?.(tx, targetOf(d));
    return true;
  });
  if (!stored) return false;
  await deps.engine.send(deps.deploy, 'notifyInstances', {}, { key: id });
  return true;
}

/** Rolls a canary or blue-green in progress back by hand (it ends `rolled_back`). */
export async function abortDeployment(deps: CommandDeps, id: string, alongside?: Alongside): Promise<{ deploymentId: string; aborting: true }> {
  const d = await deployments.getDeployment(deps.sql, id);
  if (!d) throw notFound('deployment', id);
  if (!(await commandStrategy(deps, d, 'abort', alongside))) {
    const restarted = d.desiredGeneration > 0 && strategyOf(d.strategy).type !== 'rolling';
    const why = restarted ? ' (it was stopped since it began: a start brings its instances back without walking, so there is no walk to abort; stop it instead)' : '';
    throw new AppError('ERR_DEPLOYMENT_STATE_CONFLICT', `deployment ${id} is ${d.status} with a ${strategyOf(d.strategy).type} strategy; only a canary or blue-green in progress can be aborted${why}`);
  }
  return { deploymentId: id, aborting: true };
}

/**
 * Points the environment's domains at a ready deployment; returns the hostnames it now has. A
 * canary or blue-green in progress is told to skip to 100% instead (`promoting`).
 */
export async function promoteDeployment(deps: CommandDeps, id: string, alongside?: Alongside): Promise<{ deploymentId: string; hostnames: string[]; promoting?: true }> {
  const pending = await deployments.getDeployment(deps.sql, id);
  if (!pending) throw notFound('deployment', id);
  if (pending.status !== 'ready' && (await commandStrategy(deps, pending, 'promote', alongside))) return { deploymentId: id, hostnames: [], promoting: true };
  // Read again under the lock below; refused here first, so a deployment of a deleted
  // environment (never ready) gets this answer, not the missing table's (issue 33).
  if (pending.status !== 'ready') throw notReady(pending);
  await refuseOffline(deps, pending);
  return withTx(deps.sql, async (tx) => {
    // The environment's traffic lock before the deployment's row (the lock order of traffic.ts):
    // a canary's switch holds the table while it stops this deployment.
    await lockTraffic(tx, pending.environmentId, deps.apexDomain);
    const d = await deployments.lockDeployment(tx, id);
    if (!d) throw notFound('deployment', id);
    if (d.status !== 'ready') throw notReady(d);
    const env = await tenancy.getEnvironment(tx, d.environmentId);
    await domains.pointEnvironmentDomains(tx, d.environmentId, id);
    await domains.assignDomain(tx, {
      hostname: environmentHostname(env!, deps.apexDomain),
      workspaceId: env!.workspaceId,
      environmentId: env!.id,
      deploymentId: id,
      kind: 'environment',
    });
    await routeAllTo(tx, d.environmentId, deps.apexDomain, id);
    await alongside?.(tx, targetOf(pending));
    return { deploymentId: id, hostnames: (await domains.listDomains(tx, { deploymentId: id })).map((x) => x.hostname) };
  });
}

const notReady = (d: { id: string; status: string }) => new AppError('ERR_DEPLOYMENT_NOT_READY', `deployment ${d.id} is ${d.status}; only a ready deployment can be promoted`);

/**
 * No promotion while a target region is offline (DESIGN section 11), by an operator as by a
 * walk (which holds a stored promote until every region is back, canary.ts#judgeCheck): the
 * region's krane would not hear of the new routes, and the deployment's instance rows there are
 * what krane last said, not what runs. A refusal, not a wait: the same request succeeds once the
 * region is back.
 */
async function refuseOffline(deps: CommandDeps, d: Deployment): Promise<void> {
  if (!deps.offline) return;
  const { offline } = await deps.offline(d.regions, Date.now());
  if (offline.length === 0) return;
  throw new AppError('ERR_PROMOTE_REGION_OFFLINE', `deployment ${d.id} runs in ${offline.join(', ')}, which ${offline.length === 1 ? 'is' : 'are'} offline: a promote waits until every region it runs in is back`);
}

export async function changeDesiredState(deps: CommandDeps, id: string, desired: 'running' | 'stopped', alongside?: Alongside): Promise<{ changed: boolean; generation?: number | undefined }> {
  const d = await deployments.getDeployment(deps.sql, id);
  if (!d) throw notFound('deployment', id);
  if (desired === 'running' && d.status === 'failed') {
    throw new AppError('ERR_DEPLOYMENT_STATE_CONFLICT', `deployment ${id} failed; roll back or deploy again instead of starting it`);
  }
  // The workflow re-checks under a row lock; a race with another change rejects with its code,
  // which the HTTP layer maps (src/http/api/workflow-errors.ts).
  const r = await deps.engine.call(deps.desiredState, 'change', { desired }, { key: id, ...(alongside ? { alongside: (tx: TxSql) => alongside(tx, targetOf(d)) } : {}) });
  return { changed: r.changed, generation: r.generation };
}

const LIVE = new Set(['scheduled', 'queued', 'ready', 'running', 'suspended']);

/** A pending deployment older than this lost its workflow start (the creator died in between):
 *  a live create sends its workflow within milliseconds of the insert. */
export const RECOVER_AFTER_MS = 10_000;
/** How often each replica sweeps; a stranded deployment waits at most this (plus the above). */
export const RECOVER_EVERY_MS = 30_000;

/** Runs the recovery sweep every `everyMs` until the returned stop is called. */
export function startRecoverySweep(
  deps: CommandDeps,
  logger: Logger,
  opts: { everyMs?: number | undefined; olderThanMs?: number | undefined } = {},
): () => void {
  const olderThanMs = opts.olderThanMs ?? RECOVER_AFTER_MS;
  const timer = setInterval(() => {
    recoverPendingDeployments(deps, olderThanMs)
      .then((n) => n && logger.warn({ count: n }, 'started deploy workflows of stranded deployments'))
      .catch((err) => logger.warn({ err }, 'pending deployment recovery failed'));
  }, opts.everyMs ?? RECOVER_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** Stalled deployments read per query by the recovery sweep; it pages through all of them. */
const RECOVER_PAGE = 100;

/**
 * Restarts the deploy workflow of deployments stuck on their way to ready with no live
 * workflow: the creator died between insert and send, or the workflow itself failed (e.g. the
 * database stayed away past a step's retries). A deployment whose workflow is alive (waiting
 * for instances, say) is left alone, and the sweep pages on past it, so any number of live
 * ones cannot hide a stranded one. A first start reuses the deployment's idempotency key, so
 * racing sweeps on several replicas start one workflow; a restart after a dead one needs a new
 * key, numbered by the runs so far, which racing sweeps also agree on. The new run gets the
 * dead run's input: a restart (a start after a stop) stays a restart, which leaves the
 * environment's domain where it is.
 */
export async function recoverPendingDeployments(deps: CommandDeps, olderThanMs: number): Promise<number> {
  let started = 0;
  let after: deployments.StalledCursor | null = null;
  do {
    const page: { ids: string[]; next: deployments.StalledCursor | null } = await deployments.listStalled(deps.sql, olderThanMs, { after, limit: RECOVER_PAGE });
    for (const id of page.ids) if (await recoverOne(deps, id)) started++;
    after = page.next;
  } while (after);
  return started;
}

async function recoverOne(deps: CommandDeps, id: string): Promise<boolean> {
  // Newest first: runs[0] is the one that died (or the live one).
  const runs = (await deps.engine.listInvocations({ target: deps.deploy.name, key: id, limit: 100 })).filter((i) => i.handler === 'deploy');
  if (runs.some((i) => LIVE.has(i.status))) return false;
  const restart = (runs[0]?.input as { restart?: unknown } | undefined)?.restart === true;
  const idempotencyKey = runs.length === 0 ? deployIdempotencyKey(id) : `${deployIdempotencyKey(id)}:recover:${runs.length}`;
  await deps.engine.send(deps.deploy, 'deploy', { restart }, { key: id, idempotencyKey });
  return true;
}
