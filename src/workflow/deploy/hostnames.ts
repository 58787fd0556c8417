// Hostname ownership of environments and deployments (issue 32): what names they are reached on,
// which names a caller may give, and the claims the database enforces (src/store/hostname-claims.ts).
//
// - An environment is reached on its given hostname or on the generated `<app>-<slug>.<apex>`
//   (progressive/traffic.ts#environmentHostname); a deployment on `<deployment id>.<apex>`.
// - The apex and every name under it whose label next to the apex has a generated shape (an id
//   prefix such as `dep-` or `app-`, or the default app's `default-`) are the platform's: a caller
//   may not give them (400), so a name the platform will generate later is never someone's first,
//   and no name below a generated one is another tenant's (`x.<B's generated name>` was: a site
//   there may set cookies for B's host, and passes for B's).
// - Each name is claimed when it comes into being: the environment's at its creation, the
//   deployment's in the transaction that creates it. The domain write claims a name it finds
//   unclaimed (from before claims) and refuses one another environment owns; in a workflow that
//   refusal is terminal (retrying cannot make the name free).
import { AppError } from '../../errors';
import { ID_PREFIXES } from '../../ids';
import { domains, hostnameClaims, type TxSql } from '../../store';
import type { Domain } from '../../store/domains';
import { TerminalError } from '../engine';

/** A deployment's own hostname. */
export const deploymentHostname = (deploymentId: string, apexDomain: string) => `${deploymentId}.${apexDomain}`;

/** First labels the platform generates under the apex: deployments' ids, apps' (and the default app's). */
const GENERATED_LABEL_PREFIXES = [...ID_PREFIXES, 'default'].map((p) => `${p}-`);

/** Why a caller may not give `hostname`, or undefined when it may. Pure. */
export function reservedHostnameProblem(hostname: string, apexDomain: string): string | undefined {
  if (hostname === apexDomain) return `${apexDomain} is the platform's apex domain`;
  if (!hostname.endsWith(`.${apexDomain}`)) return undefined;
  const below = hostname.slice(0, -(apexDomain.length + 1));
  // The label next to the apex decides: generated names are one label deep, and every name
  // below one belongs with it.
  const label = below.slice(below.lastIndexOf('.') + 1);
  const prefix = GENERATED_LABEL_PREFIXES.find((p) => label.startsWith(p));
  return prefix ? `names ${prefix}….${apexDomain} and the names below them are the platform's (deployments' and environments' generated hostnames)` : undefined;
}

/** Claims a new deployment's own hostname, in the transaction that creates the deployment. */
export async function claimDeploymentHostname(tx: TxSql, apexDomain: string, d: { id: string; workspaceId: string; environmentId: string }): Promise<void> {
  await hostnameClaims.claimHostname(tx, { hostname: deploymentHostname(d.id, apexDomain), kind: 'deployment', workspaceId: d.workspaceId, environmentId: d.environmentId, deploymentId: d.id });
}

/** The domain write of a workflow step: a name another environment owns fails the step for good. */
export async function assignOwnDomain(tx: TxSql, d: { hostname: string; workspaceId: string; environmentId: string; deploymentId: string; kind: Domain['kind'] }): Promise<void> {
  try {
    await domains.assignDomain(tx, d);
  } catch (err) {
    if (err instanceof AppError && err.code === 'ERR_HOSTNAME_TAKEN') throw new TerminalError(err.message, { code: err.code });
    throw err;
  }
}
