// `unkey-infra deployments ls|get|stop|start|rollback|promote|abort`: thin views over
// /v1/deployments. --json prints the API's answer unchanged.
import type { ClientFlags } from '../client';
import { EXIT_OK } from '../errors';
import { deploymentDetail, deploymentsTable } from '../render';
import type { CommandContext } from './context';
import { followDeployment } from './follow';

export interface JsonFlag extends ClientFlags {
  json?: boolean;
}

const printJson = (ctx: CommandContext, value: unknown) => ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);

export async function deploymentsLs(o: JsonFlag & { environment?: string; limit?: number }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const r = await client.get('/v1/deployments', { query: { environmentId: o.environment, limit: o.limit } });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(deploymentsTable(r.deployments, ctx.now()));
  return EXIT_OK;
}

export async function deploymentsGet(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const d = await (await ctx.client(o)).get('/v1/deployments/{id}', { path: { id } });
  if (o.json) printJson(ctx, d);
  else ctx.io.out(deploymentDetail(d, ctx.now()));
  return EXIT_OK;
}

export async function deploymentsSetDesired(id: string, desired: 'stop' | 'start', o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post(desired === 'stop' ? '/v1/deployments/{id}/stop' : '/v1/deployments/{id}/start', { path: { id } });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`deployment ${r.id}: desired state ${r.desiredState}${r.changed ? '' : ' (already)'}\n`);
  return EXIT_OK;
}

export async function deploymentsRollback(id: string, o: JsonFlag & { wait?: boolean; timeout?: number }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const r = await client.post('/v1/deployments/{id}/rollback', { path: { id } });
  if (!o.wait) {
    if (o.json) printJson(ctx, r);
    else ctx.io.out(`${r.id}\n`);
    return EXIT_OK;
  }
  if (!o.json) ctx.io.out(`created deployment ${r.id} from the config of ${r.rolledBackFrom}\n`);
  return followDeployment(ctx, client, r.id, { json: Boolean(o.json), timeoutMs: o.timeout });
}

export async function deploymentsPromote(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post('/v1/deployments/{id}/promote', { path: { id } });
  if (o.json) printJson(ctx, r);
  else if (r.promoting) ctx.io.out(`promoting ${r.deploymentId}: its canary or blue-green skips to 100%\n`);
  else ctx.io.out(`promoted ${r.deploymentId}${r.hostnames.length ? `\n${r.hostnames.map((h) => `  ${h}`).join('\n')}` : ''}\n`);
  return EXIT_OK;
}

export async function deploymentsAbort(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post('/v1/deployments/{id}/abort', { path: { id } });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`aborting ${r.deploymentId}: traffic goes back to the stable deployment\n`);
  return EXIT_OK;
}
