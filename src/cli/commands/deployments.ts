// `unkey-infra deployments ls|get|stop|start|rollback|promote|abort`: thin views over
// /v1/deployments. --json prints the API's answer unchanged.
import type { ClientFlags } from '../client';
import { EXIT_OK } from '../errors';
import type { DeploymentDetail, DeploymentSummary } from '../api-types';
import { deploymentDetail, deploymentsTable } from '../render';
import type { CommandContext } from './context';
import { followDeployment } from './follow';
import { newIdempotencyKey } from '../retry';

export interface JsonFlag extends ClientFlags {
  json?: boolean;
}

const path = (id: string, action = '') => `/v1/deployments/${encodeURIComponent(id)}${action}`;
const printJson = (ctx: CommandContext, value: unknown) => ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);

export async function deploymentsLs(o: JsonFlag & { environment?: string; limit?: number }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const r = await client.get<{ deployments: DeploymentSummary[] }>('/v1/deployments', { environmentId: o.environment, limit: o.limit });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(deploymentsTable(r.deployments, ctx.now()));
  return EXIT_OK;
}

export async function deploymentsGet(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const d = await (await ctx.client(o)).get<DeploymentDetail>(path(id));
  if (o.json) printJson(ctx, d);
  else ctx.io.out(deploymentDetail(d, ctx.now()));
  return EXIT_OK;
}

export async function deploymentsSetDesired(id: string, desired: 'stop' | 'start', o: JsonFlag, ctx: CommandContext): Promise<number> {
  // Level-triggered: sending it twice leaves the same desired state, so it rides out a failover.
  const r = await (await ctx.client(o)).post<{ id: string; desiredState: string; changed: boolean }>(path(id, `/${desired}`), undefined, { retry: true });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`deployment ${r.id}: desired state ${r.desiredState}${r.changed ? '' : ' (already)'}\n`);
  return EXIT_OK;
}

export async function deploymentsRollback(id: string, o: JsonFlag & { wait?: boolean; timeout?: number }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const r = await client.post<{ id: string; status: string; rolledBackFrom: string }>(path(id, '/rollback'), undefined, { retry: true, idempotencyKey: newIdempotencyKey() });
  if (!o.wait) {
    if (o.json) printJson(ctx, r);
    else ctx.io.out(`${r.id}\n`);
    return EXIT_OK;
  }
  if (!o.json) ctx.io.out(`created deployment ${r.id} from the config of ${r.rolledBackFrom}\n`);
  return followDeployment(ctx, client, r.id, { json: Boolean(o.json), timeoutMs: o.timeout });
}

export async function deploymentsPromote(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post<{ deploymentId: string; hostnames: string[]; promoting?: boolean }>(path(id, '/promote'));
  if (o.json) printJson(ctx, r);
  else if (r.promoting) ctx.io.out(`promoting ${r.deploymentId}: its canary or blue-green skips to 100%\n`);
  else ctx.io.out(`promoted ${r.deploymentId}${r.hostnames.length ? `\n${r.hostnames.map((h) => `  ${h}`).join('\n')}` : ''}\n`);
  return EXIT_OK;
}

export async function deploymentsAbort(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post<{ deploymentId: string; aborting: boolean }>(path(id, '/abort'));
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`aborting ${r.deploymentId}: traffic goes back to the stable deployment\n`);
  return EXIT_OK;
}
