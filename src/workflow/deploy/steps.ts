// The deploy workflow's database steps (deploy.ts runs each as one runTx, so its writes commit
// with its journal entry): the topologies, the sentinels, a rolling deploy's domains and
// traffic when it becomes ready, and the cleanup of one that did not. Apart from deploy.ts so
// the workflow reads as its order of steps.
import { TerminalError } from '../engine';
import { cilium, deployments, domains, sentinels, tenancy, topology } from '../../store';
import type { TxSql } from '../../store/db';
import { newId } from '../../ids';
import type { WorkflowMetrics } from '../metrics';
import { withSpan } from '../../tracing';
import { environmentHostname, lockTraffic, routeAllTo, withdrawTraffic } from '../progressive/traffic';
import { superseded } from '../progressive/walk';
import { quarantineFailure } from '../progressive/quarantine';
import { assignOwnDomain, deploymentHostname } from './hostnames';

/** What the steps need of the deploy's dependencies. */
export interface StepDeps {
  apexDomain: string;
  metrics: WorkflowMetrics;
  /** Desired config of sentinels the deploy creates. */
  sentinelDefaults: { image: string; replicas: number; cpuMillicores: number; memoryMib: number };
}

/** The code of a deploy ended by a stop (an answer, not an error: deploy.ts). */
export const STOPPED = 'ERR_DEPLOY_STOPPED';

/**
 * The domains step of a rolling deploy: its own hostname, `ready`, and (unless a newer ready
 * deployment holds it, or this is a restart while something else serves the environment) the
 * environment's domain and all its traffic.
 */
export async function markReady(tx: TxSql, deps: StepDeps, id: string, environmentId: string, restart: boolean): Promise<null> {
  // The environment's traffic lock before the deployment's row: the lock order of traffic.ts.
  const table = await lockTraffic(tx, environmentId, deps.apexDomain);
  // A stop that landed after the last instance check must not end in `ready`.
  const locked = await deployments.lockDeployment(tx, id);
  if (locked?.desiredState === 'stopped') throw new TerminalError('stopped before it became ready', { code: STOPPED });
  const env = await tenancy.getEnvironment(tx, environmentId);
  const base = { workspaceId: env!.workspaceId, environmentId: env!.id, deploymentId: id };
  await assignOwnDomain(tx, { ...base, hostname: deploymentHostname(id, deps.apexDomain), kind: 'deployment' });
  const row = await deployments.setDeploymentStatus(tx, id, 'ready');
  // The environment's domain follows the newest ready deployment; an older one that
  // finishes late, or a restart, does not take it back (promote moves it explicitly).
  const envHost = environmentHostname(env!, deps.apexDomain);
  const holder = await domains.holderOf(tx, envHost);
  const newerHolds = holder && holder.deploymentId !== id && holder.status === 'ready' && holder.createdAt > row!.createdAt;
  // A restart takes them back only when nothing serves the environment: its stop (or the stops
  // of every deployment that served it) emptied the table, and a start should end that outage.
  if ((!restart || table.length === 0) && !newerHolds) {
    await assignOwnDomain(tx, { ...base, hostname: envHost, kind: 'environment' });
    // Traffic follows the domain: a rolling deploy that became ready takes all of it.
    await routeAllTo(tx, environmentId, deps.apexDomain, id);
  }
  if (row) deps.metrics.finished('ready', row.createdAt);
  return null;
}

/** The cleanup step of a deploy that did not become ready. */
export async function cleanUp(tx: TxSql, deps: StepDeps, id: string, err: unknown, reason: string, generation: number | undefined): Promise<'requeued' | 'stopped' | 'failed'> {
  // The traffic lock first (traffic.ts); a deployment never changes environment, so reading
  // which one before the lock is safe.
  const found = await deployments.getDeployment(tx, id);
  // (A deleted environment has no table to lock, and its cleanup must still end the deployment.)
  if (found && (await tenancy.getEnvironment(tx, found.environmentId))) await lockTraffic(tx, found.environmentId, deps.apexDomain);
  const row = await deployments.lockDeployment(tx, id);
  // Stopped and started again since this run began (whatever ended it: the stop itself, or the
  // table the stop changed under a walk): the start has queued a fresh deploy behind this one,
  // so leave its running topologies and status alone (walk.ts#superseded). A journal from
  // before generations knows only the stop that ended it.
  if (row && (superseded(row, generation) || (generation === undefined && row.desiredState === 'running' && err instanceof TerminalError && err.code === STOPPED))) return 'requeued';
  // Whatever ended the deploy, a stop that arrived meanwhile (even during the sentinel
  // wait) makes it `stopped`, which a later start can resume, rather than `failed`.
  const stopped = row?.desiredState === 'stopped';
  await topology.setTopologyStatus(tx, id, 'stopped');
  // Instance rows stay: they are what krane last saw, and krane removes them when the pods
  // go. Deleting them here lost a pod that outlived the stop (its krane could not act on it)
  // and had been reported once, so a later start waited for it until a relist (chaos seed 12).
  // A canary that failed mid-walk (or was stopped) must not keep its share of traffic.
  if (row) await withdrawTraffic(tx, deps.apexDomain, row.environmentId, id);
  const done = await deployments.setDeploymentStatus(tx, id, stopped ? 'stopped' : 'failed', stopped ? null : reason);
  if (done) deps.metrics.finished(stopped ? 'stopped' : 'failed', done.createdAt);
  // Failed because its instances failed: the image is the likely cause, so it is quarantined
  // with this status change (not after a timeout, a stop or a region outage).
  if (done && !stopped && err instanceof TerminalError && err.code === 'ERR_DEPLOY_INSTANCES_FAILED') await quarantineFailure(tx, done, reason);
  return stopped ? 'stopped' : 'failed';
}

/**
 * The sentinels step: per target region, the environment's sentinel and gossip policy, created
 * where missing; which ones this deploy created (and so waits for).
 */
export async function ensureSentinels(tx: TxSql, deps: StepDeps, d: { environmentId: string; regions: string[] }): Promise<{ created: string[]; existing: string[] }> {
  const env = await tenancy.getEnvironment(tx, d.environmentId);
  if (!env) throw new TerminalError(`environment ${d.environmentId} not found`, { code: 'ERR_DEPLOY_ENVIRONMENT' });
  const scope = { workspaceId: env.workspaceId, projectId: env.projectId, appId: env.appId, environmentId: env.id };
  const out = { created: [] as string[], existing: [] as string[] };
  for (const region of d.regions) {
    const { sentinel, created } = await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region, ...deps.sentinelDefaults });
    await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region });
    (created ? out.created : out.existing).push(sentinel.id);
  }
  return out;
}

/**
 * The topology step: the deployment goes `deploying`, then one topology row (with its outbox
 * row) per region; `aborted` (writing nothing) when an abort of its walk came first. Two spans, as seed 001 names them; the outbox rows carry events.emit's
 * traceparent, so krane's deployment.apply.<region> spans become its children.
 */
export async function createTopologies(tx: TxSql, id: string, d: { regions: string[]; replicas: number; environmentId: string }, abortable: boolean): Promise<'aborted' | null> {
  const attributes = { 'deployment.id': id, 'deployment.regions': d.regions };
  const row = await withSpan('deployment.topology.create', { attributes, childOnly: true }, async () => {
    const locked = await deployments.lockDeployment(tx, id);
    if (locked?.desiredState === 'stopped') throw new TerminalError('stopped before it became ready', { code: STOPPED });
    // An abort accepted before this lock: no workload of the canary is ever asked for.
    if (abortable && locked?.trafficCommand === 'abort') return 'aborted' as const;
    // Held against a deletion while the topologies are written (tenancy.shareEnvironment): a
    // deployment of a deleted environment asks for no workload, and ends failed (issue 33).
    if (!(await tenancy.shareEnvironment(tx, d.environmentId))) throw new TerminalError(`environment ${d.environmentId} was deleted`, { code: 'ERR_DEPLOY_ENVIRONMENT' });
    await deployments.setDeploymentStatus(tx, id, 'deploying');
    return locked!;
  });
  if (row === 'aborted') return row;
  await withSpan('deployment.events.emit', { attributes, childOnly: true }, async () => {
    for (const region of d.regions) {
      await topology.upsertTopology(tx, { deploymentId: id, region, workspaceId: row.workspaceId, replicas: d.replicas, desiredStatus: 'running' });
    }
  });
  return null;
}
