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
import { routes, tenancy, type TxSql } from '../store';
import type { Backend } from '../store/routes';
import { TerminalError } from './engine';

export const environmentHostname = (env: { appId: string; slug: string }, apexDomain: string) => `${env.appId}-${env.slug}.${apexDomain}`;

/** Takes the environment's traffic lock (the first lock, see above); returns its backends. */
export async function lockTraffic(tx: TxSql, environmentId: string, apexDomain: string): Promise<Backend[]> {
  const env = await tenancy.getEnvironment(tx, environmentId);
  if (!env) throw new TerminalError(`environment ${environmentId} not found`, { code: 'ERR_DEPLOY_ENVIRONMENT' });
  const table = await routes.lockRoutes(tx, { environmentId, workspaceId: env.workspaceId, hostname: environmentHostname(env, apexDomain) });
  return table.backends;
}

/** Writes the table of an environment; returns the backends as written. */
export async function setTraffic(tx: TxSql, environmentId: string, apexDomain: string, backends: Backend[]): Promise<Backend[]> {
  const env = await tenancy.getEnvironment(tx, environmentId);
  if (!env) throw new TerminalError(`environment ${environmentId} not found`, { code: 'ERR_DEPLOY_ENVIRONMENT' });
  await routes.setRoutes(tx, { environmentId, workspaceId: env.workspaceId, hostname: environmentHostname(env, apexDomain), backends });
  return backends;
}

/** All traffic to one deployment: a rolling deploy that became ready, a promote, the end of a canary. */
export const routeAllTo = (tx: TxSql, environmentId: string, apexDomain: string, deploymentId: string) =>
  setTraffic(tx, environmentId, apexDomain, [{ deploymentId, weight: 100 }]);

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
