// Traffic changes as the workflows make them: the environment's routing table (src/store/routes.ts)
// rewritten in the caller's transaction, so a weight change commits with the workflow step that
// decided it. The hostname is the environment's (`<app>-<slug>.<apex>`), as its domain is.
import { routes, tenancy, type TxSql } from '../store';
import type { Backend } from '../store/routes';
import { TerminalError } from './engine';

export const environmentHostname = (env: { appId: string; slug: string }, apexDomain: string) => `${env.appId}-${env.slug}.${apexDomain}`;

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
