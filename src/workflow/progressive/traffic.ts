// Traffic changes as the workflows make them: the environment's routing table (src/store/routes.ts)
// rewritten in the caller's transaction, so a weight change commits with the workflow step that
// decided it. The hostname is the environment's (`<app>-<slug>.<apex>`), as its domain is.
//
// Lock order. Every transaction that touches an environment's routing table together with
// deployments or domains (a walk's steps, a switch, a rollback, a promote, a rolling deploy
// becoming ready, a stop, a failed deploy's cleanup) takes, in this order:
//
//   1. the environment's routes row (lockTraffic, before anything else is locked),
//   2. the row of the deployment the transaction is about,
//   3. domains, and other deployments of the environment (the stable a switch stops).
//
// Taking the table first makes it the environment's mutex: two such transactions meet at their
// first lock, where one simply waits, instead of each holding a row the other needs (a switch
// holding the table and wanting the stable's row while a promote of the stable holds that row
// and wants the table, which PostgreSQL ends with a deadlock error, 40P01). A runTx step's own
// engine fence (its invocation row) comes before all of this, and nothing else takes that.
// A status report holds the routes rows of its deployments' environments FOR SHARE as its first
// lock too (routes.holdRoutesOf), before its instance rows hold their deployments' rows FOR KEY
// SHARE, so a walk waits for a report, or a report for a walk, and neither ends in 40P01.
import { deployments, routes, tenancy, type TxSql } from '../../store';
import type { Backend } from '../../store/routes';
import { TerminalError } from '../engine';

/** An environment's own hostname when it was given one at creation, else `<app>-<slug>.<apex>`. */
export const environmentHostname = (env: { appId: string; slug: string; hostname?: string | null }, apexDomain: string) => env.hostname ?? `${env.appId}-${env.slug}.${apexDomain}`;

/** What names an environment's table: its id, workspace and hostname. */
async function tableKey(tx: TxSql, environmentId: string, apexDomain: string) {
  const env = await tenancy.getEnvironment(tx, environmentId);
  if (!env) throw new TerminalError(`environment ${environmentId} not found`, { code: 'ERR_DEPLOY_ENVIRONMENT' });
  return { environmentId, workspaceId: env.workspaceId, hostname: environmentHostname(env, apexDomain) };
}

/** Takes the environment's traffic lock (the first lock, see above); returns its backends. */
export async function lockTraffic(tx: TxSql, environmentId: string, apexDomain: string): Promise<Backend[]> {
  return (await routes.lockRoutes(tx, await tableKey(tx, environmentId, apexDomain))).backends;
}

/** Writes the table of an environment; returns the backends as written. */
export async function setTraffic(tx: TxSql, environmentId: string, apexDomain: string, backends: Backend[]): Promise<Backend[]> {
  await routes.setRoutes(tx, { ...(await tableKey(tx, environmentId, apexDomain)), backends });
  return backends;
}

/**
 * Whether a deployment may carry traffic: meant to run, and its workflow saw it ready. A stopped
 * one has no instances; one still coming up (a canary under analysis, a start after a stop) has
 * not been judged, so it gets no traffic its strategy did not give it. Pure.
 */
export const serves = (d: { status: string; desiredState: string } | undefined): boolean => d?.desiredState === 'running' && d.status === 'ready';

/**
 * Takes a deployment's traffic away (a stop, a failed or rolled-back canary): its weight goes to
 * the backends that may serve, and when none is left, the table empties, since there is no
 * deployment to send the traffic to. It takes the traffic lock itself, so a caller that has
 * locked a deployment row must have taken the traffic lock before (the lock order above).
 */
export async function withdrawTraffic(tx: TxSql, apexDomain: string, environmentId: string, id: string): Promise<void> {
  // A deleted environment's table was emptied by its deletion: nothing to take away, and a stop
  // or a failed deploy's cleanup there must still go through (issue 33).
  if (!(await tenancy.getEnvironment(tx, environmentId))) return;
  const table = await lockTraffic(tx, environmentId, apexDomain);
  if (!table.some((b) => b.deploymentId === id)) return;
  const others = await deployments.runStates(tx, table.filter((b) => b.deploymentId !== id).map((b) => b.deploymentId));
  const next = withoutBackend(table, id, new Set(others.filter(serves).map((d) => d.id)));
  if (next.length > 0) await setTraffic(tx, environmentId, apexDomain, next);
  else await routes.clearRoutes(tx, await tableKey(tx, environmentId, apexDomain));
}

/**
 * The table without `id`, its weight shared among the `heirs` in proportion to what they carry
 * (evenly when they carry nothing), so the split between them stays as it was. Without heirs the
 * table is empty, unless `id` carried nothing. Pure.
 */
export function withoutBackend(backends: readonly Backend[], id: string, heirs: ReadonlySet<string>): Backend[] {
  const gone = backends.find((b) => b.deploymentId === id);
  const rest = backends.filter((b) => b.deploymentId !== id);
  if (!gone || gone.weight === 0) return rest;
  const takers = rest.filter((b) => heirs.has(b.deploymentId));
  if (takers.length === 0) return [];
  const base = takers.reduce((n, b) => n + b.weight, 0);
  const exact = takers.map((b) => (base > 0 ? (gone.weight * b.weight) / base : gone.weight / takers.length));
  const extra = exact.map(Math.floor);
  // Whole percents: the largest remainders get the points rounding left over (ties by table order).
  let left = gone.weight - extra.reduce((n, x) => n + x, 0);
  const byRemainder = exact.map((_, i) => i).sort((i, j) => exact[j]! - extra[j]! - (exact[i]! - extra[i]!) || i - j);
  for (const i of byRemainder) {
    if (left <= 0) break;
    extra[i]!++;
    left--;
  }
  const add = new Map(takers.map((b, i) => [b.deploymentId, extra[i]!]));
  return rest.map((b) => ({ deploymentId: b.deploymentId, weight: b.weight + (add.get(b.deploymentId) ?? 0) }));
}

/** All traffic to one deployment: a rolling deploy that became ready, a promote, the end of a canary. */
export const routeAllTo = (tx: TxSql, environmentId: string, apexDomain: string, deploymentId: string) =>
  setTraffic(tx, environmentId, apexDomain, [{ deploymentId, weight: 100 }]);

/** Whether two tables route the same: the same deployments at the same weights, in any order. Pure. */
export function sameTable(a: readonly Backend[], b: readonly Backend[]): boolean {
  const key = (t: readonly Backend[]) => t.map((x) => `${x.deploymentId}:${x.weight}`).sort().join(',');
  return key(a) === key(b);
}

/**
 * The table with `canary` at `weight` and the rest on the stable deployment: the split a canary
 * step sets. Pure. Without a stable deployment (the environment's first deploy) the canary takes
 * everything, since there is nothing else to send traffic to.
 */
export function canarySplit(stable: string | undefined, canary: string, weight: number): Backend[] {
  if (!stable || stable === canary) return [{ deploymentId: canary, weight: 100 }];
  if (weight >= 100) return [{ deploymentId: canary, weight: 100 }];
  return [
    { deploymentId: stable, weight: 100 - weight },
    { deploymentId: canary, weight },
  ];
}
