// A walk: the traffic transactions that a canary (canary.ts) and a blue-green (blue-green.ts)
// share, each one journaled runTx step of the deploy workflow. startWalk picks the stable and
// puts the new deployment in the table at weight 0; the strategy then writes its splits, and
// ends with completeSwitch (100% new) or rollBack (the canary stopped, its share returned).
//
// Optimistic concurrency on the table. The walk is not the table's only writer: a promote, a
// rolling deploy becoming ready and a stop write it too, from any ctrl replica, at any moment.
// So a walk remembers the table it last wrote (`expected`, derived from journaled values, so a
// replay on another replica derives the same) and, under the traffic lock, compares before each
// write. Any difference is someone else's decision: the walk writes nothing over it and ends,
// `failed` with the table it found. Its holds compare too (without the lock, a read), so it ends
// within one check, not at the end of a long pause. The compare and the write commit in one
// transaction with the step's journal entry, so a step that replays after a crash either
// committed both (and is not run again) or neither.
//
// The last accepted stop or start wins (issue 23). A walk began under the deployment's
// desired-state generation (sql/0009, journaled by the deploy's load step); an operator's stop
// and start since then move it, and the start queues a run of its own. So every write that ends
// the walk first compares, under the row's lock: if the row is running again under a newer
// generation (`superseded`), the walk writes nothing and leaves the deployment to that run. It
// is the rolling path's guard (deploy.ts#cleanUp) made general, and cleanUp uses it too.
import { deployments, tenancy, topology, type Sql } from '../../store';
import type { Backend } from '../../store/routes';
import type { TxSql } from '../../store/db';
import type { Deployment, TrafficCommand } from '../../store/deployments';
import { TerminalError, type Context } from '../engine';
import type { OutboundPolicy } from '../outbound/policy';
import { canarySplit, environmentHostname, lockTraffic, routeAllTo, sameTable, serves, setTraffic, withdrawTraffic } from './traffic';
import type { WorkflowMetrics } from '../metrics';
import type { OfflineCheck } from '../regions';
import { quarantineFailure } from './quarantine';
import { assignOwnDomain, deploymentHostname } from '../deploy/hostnames';

export interface StrategyDeps {
  sql: Sql;
  apexDomain: string;
  /** Check pace of a hold without Prometheus analysis (krane's reports also wake it). */
  recheckMs: number;
  /** State key of the awakeable that status reports and operator commands resolve. */
  wakeKey: string;
  metrics: WorkflowMetrics;
  /** Where Prometheus queries may go, checked again at each query (names can re-resolve). */
  outbound: OutboundPolicy;
  /** The deployment's target regions, whose liveness every hold checks. */
  regions: readonly string[];
  /** Which target regions are offline, and when to give up on one (src/workflow/regions.ts). */
  offline?: OfflineCheck | undefined;
}

/** `superseded`: a stop and a start were accepted meanwhile; the start's own run carries on. */
export type StrategyOutcome = { status: 'ready' } | { status: 'rolled_back'; reason: string } | { status: 'superseded' };

/**
 * Pure: whether a later stop and start took the deployment from a run that began under
 * `generation`: it is meant to run again, under a newer generation, and that start queued a run
 * of its own. A journal from before generations (undefined) cannot tell: never superseded.
 */
export function superseded(row: { desiredState: string; desiredGeneration: number }, generation: number | undefined): boolean {
  return generation !== undefined && row.desiredState === 'running' && row.desiredGeneration !== generation;
}

/**
 * Pure: whether a walk's rollback yields to a stop and start accepted since it began (and
 * writes nothing, leaving the deployment to the start's run). Not when the canary's own signals
 * failed (`signal`: its instances, or the analysis reaching its failureLimit): that verdict is
 * about the image, whatever the operator asked meanwhile, and the start's run would bring it
 * back `ready` without any analysis (a start resumes, it does not walk again). The model test
 * found this: a blue-green with failureLimit 1 whose failing check landed just before a stop
 * and a start ended ready.
 */
export function yieldsToStart(row: { desiredState: string; desiredGeneration: number }, generation: number | undefined, signal: boolean): boolean {
  return !signal && superseded(row, generation);
}

/** What startWalk journals: the stable it returns to, any command already given, the table it left. */
export interface WalkStart {
  stable: string | null;
  command: TrafficCommand | null;
  /** Absent in journals written before walks compared tables (see walkOf). */
  table?: Backend[];
}

/** A walk under way: whose traffic it moves, and the table as it last wrote it. */
export interface Walk {
  id: string;
  environmentId: string;
  stable: string | null;
  /** null: unknown (a walk resumed from an older journal), compared with nothing. */
  expected: Backend[] | null;
  /** The desired-state generation the deploy began under (undefined: an older journal). */
  generation?: number | undefined;
}

export function walkOf(id: string, environmentId: string, start: WalkStart, generation?: number): Walk {
  // An older startWalk wrote the weight-0 split whenever it had a stable and no abort, and
  // journaled nothing else, so that is what such a walk expects; without a stable it wrote nothing.
  const written = start.stable && start.command !== 'abort' ? canarySplit(start.stable, id, 0) : null;
  return { id, environmentId, stable: start.stable, expected: start.table ?? written, generation };
}

/**
 * The first step of a canary or blue-green, before its instances are waited for: the stable
 * deployment (the one other deployment with traffic, running and ready), and the new one in the
 * table at weight 0. Without such a stable the walk has nothing to split with or return to.
 */
export async function startWalk(tx: TxSql, deps: StrategyDeps, id: string, environmentId: string, generation?: number): Promise<WalkStart> {
  const table = await lockTraffic(tx, environmentId, deps.apexDomain);
  const d = await deployments.lockDeployment(tx, id);
  // Stopped, or stopped and started again, since the run began (while it built or waited for
  // its sentinels): no walk. The start's own run brings it up without walking (deploy.ts), and
  // a walk under a generation that moved on would take commands the store no longer accepts.
  if (d?.desiredState === 'stopped' || (d && superseded(d, generation))) throw new TerminalError('stopped before it became ready', { code: 'ERR_DEPLOY_STOPPED' });
  const command = (await deployments.getDeployment(tx, id))?.trafficCommand ?? null;
  const others = table.filter((b) => b.deploymentId !== id);
  const states = new Map((await deployments.runStates(tx, others.map((b) => b.deploymentId))).map((s) => [s.id, s]));
  // A stopped deployment moves no traffic (a table from before stops withdrew it may still name one).
  const live = others.filter((b) => states.get(b.deploymentId)?.desiredState === 'running');
  // Two walks in one environment would each rewrite the table from their own view of it; a
  // table with more than one other live backend means another canary or blue-green is under way.
  if (live.length > 1) {
    throw new TerminalError(`another canary or blue-green is moving traffic in environment ${environmentId} (${live.map((b) => b.deploymentId).join(', ')}); deploy again when it ends`, {
      code: 'ERR_DEPLOYMENT_STATE_CONFLICT',
    });
  }
  // The stable is where an abort or a failing gate sends everything back: it must be serving.
  const top = live[0];
  const stable = top && top.weight > 0 && serves(states.get(top.deploymentId)) ? top.deploymentId : null;
  if (!stable || command === 'abort') return { stable, command, table };
  return { stable, command, table: await setTraffic(tx, environmentId, deps.apexDomain, canarySplit(stable, id, 0)) };
}

/**
 * The start of a step that moves traffic: the traffic lock, then the deployment's row (the lock
 * order of traffic.ts). An abort or a stop that committed before it wins over the step, which
 * then writes nothing (an aborted canary never gets the share of a step it did not start); a
 * table someone else changed ends the walk (tableChanged).
 */
export async function guardStep(tx: TxSql, deps: StrategyDeps, walk: Walk): Promise<'abort' | 'stopped' | null> {
  const table = await lockTraffic(tx, walk.environmentId, deps.apexDomain);
  const verdict = stepVerdict(await deployments.lockDeployment(tx, walk.id), walk, table);
  if (verdict === 'changed') throw tableChanged(walk, table);
  return verdict;
}

/**
 * Pure: what guardStep decides. A stop and a start accepted since the walk began count as the
 * stop (the rollback that follows yields to the start's run, rollBack#yieldsToStart), as they
 * do in startWalk: the stop took the canary's entry out of the table, so judged by the table
 * alone the walk failed on its own operator's stop and start (chaos seed 72).
 */
export function stepVerdict(
  d: { trafficCommand: string | null; desiredState: string; desiredGeneration: number } | null | undefined,
  walk: Pick<Walk, 'expected' | 'generation'>,
  table: readonly Backend[],
): 'abort' | 'stopped' | 'changed' | null {
  if (d?.trafficCommand === 'abort') return 'abort';
  if (d?.desiredState === 'stopped' || (d && superseded(d, walk.generation))) return 'stopped';
  if (walk.expected && !sameTable(table, walk.expected)) return 'changed';
  return null;
}

const show = (t: readonly Backend[]) => (t.length ? t.map((b) => `${b.deploymentId}:${b.weight}`).join(', ') : 'empty');

/**
 * How a walk ends when someone else changed its table: a TerminalError, so the deploy's cleanup
 * stops the canary and takes back any share it still has, and the deployment ends `failed`.
 */
export function tableChanged(walk: Walk, found: readonly Backend[]): TerminalError {
  return new TerminalError(
    `traffic of environment ${walk.environmentId} was changed while this deployment was shifting it (a promote, a stop or another deploy): ` +
      `the table is ${show(found)}, this walk last set ${show(walk.expected ?? [])}; it ends without writing over that change`,
    { code: 'ERR_DEPLOYMENT_STATE_CONFLICT' },
  );
}

/**
 * The canary stopped and `rolled_back`. Stopping withdraws its share, which over the walk's own
 * table is the rollback itself (everything back on the stable, in one change); over a table
 * someone else changed, it takes back only the canary's share, never the other change, and never
 * sends traffic to a stable that no longer serves. `signal`: the canary's own signals failed, so
 * its image is quarantined (quarantine.ts), unless an operator's abort or stop came first, and
 * a later start does not undo the rollback (yieldsToStart).
 */
export async function rollBack(ctx: Context, deps: StrategyDeps, walk: Walk, reason: string, signal = false): Promise<StrategyOutcome> {
  const done = await ctx.runTx('rollback', async (tx) => {
    await lockTraffic(tx, walk.environmentId, deps.apexDomain);
    const locked = await deployments.lockDeployment(tx, walk.id);
    if (locked && yieldsToStart(locked, walk.generation, signal)) return false;
    // An operator's abort (the stored command) or stop (desired state already stopped) is a
    // decision, not a failed signal, even when a signal failed too.
    const byOperator = locked?.trafficCommand === 'abort' || locked?.desiredState === 'stopped';
    const row = await stopDeployment(tx, deps, walk.environmentId, walk.id, 'rolled_back', reason);
    if (row) deps.metrics.finished('rolled_back', row.createdAt);
    if (row && signal && !byOperator) await quarantineFailure(tx, row, reason);
    return true;
  });
  return done === false ? { status: 'superseded' } : { status: 'rolled_back', reason };
}

/**
 * 100% to the new deployment, its domains, `ready`, and (with `stopStable`) the previous
 * deployment stopped; blue-green stops it later, after its scale-down delay.
 */
export async function completeSwitch(tx: TxSql, deps: StrategyDeps, walk: Walk, stopStable = true): Promise<'abort' | 'stopped' | null> {
  const { id, environmentId, stable } = walk;
  const held = await guardStep(tx, deps, walk);
  if (held) return held;
  const env = (await tenancy.getEnvironment(tx, environmentId))!;
  const base = { workspaceId: env.workspaceId, environmentId, deploymentId: id };
  await assignOwnDomain(tx, { ...base, hostname: deploymentHostname(id, deps.apexDomain), kind: 'deployment' });
  await assignOwnDomain(tx, { ...base, hostname: environmentHostname(env, deps.apexDomain), kind: 'environment' });
  await routeAllTo(tx, environmentId, deps.apexDomain, id);
  await deployments.clearTrafficCommand(tx, id);
  const row = await deployments.setDeploymentStatus(tx, id, 'ready');
  if (row) deps.metrics.finished('ready', row.createdAt);
  if (stable && stopStable) await stopDeployment(tx, deps, environmentId, stable, 'stopped', null);
  return null;
}

/**
 * Stops a deployment's workloads everywhere, takes its traffic away and ends it in `status`. The
 * caller holds the environment's traffic lock (traffic.ts): the withdrawal comes first so the
 * deployment's row is locked after the table, as the lock order says.
 */
export async function stopDeployment(
  tx: TxSql,
  deps: Pick<StrategyDeps, 'apexDomain'>,
  environmentId: string,
  id: string,
  status: 'stopped' | 'rolled_back',
  reason: string | null,
): Promise<Deployment | undefined> {
  await withdrawTraffic(tx, deps.apexDomain, environmentId, id);
  await deployments.clearTrafficCommand(tx, id);
  await deployments.setDeploymentDesiredState(tx, id, 'stopped');
  await topology.setTopologyStatus(tx, id, 'stopped');
  // Its instance rows go when krane reports the pods gone (see the deploy's cleanUp).
  return deployments.setDeploymentStatus(tx, id, status, reason);
}
