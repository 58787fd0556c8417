// `unkey-infra deploy`: creates a deployment (POST /v1/deployments) and, with --wait, follows it
// to ready or failed. Without --regions it deploys to every region of the local dev stack.
import type { ClientFlags } from '../client';
import { usageError, EXIT_OK } from '../errors';
import type { CommandContext } from './context';
import { followDeployment } from './follow';

export interface DeployOptions extends ClientFlags {
  image?: string;
  buildContext?: string;
  regions?: string[];
  replicas?: number;
  cpu?: number;
  memory?: number;
  port?: number;
  env?: Record<string, string>;
  environment?: string;
  wait?: boolean;
  timeout?: number;
  json?: boolean;
}

/** API field → the flag that sets it, so a 400 names what the user typed. */
const FLAGS: Record<string, string> = {
  image: '--image',
  buildContext: '--build-context',
  regions: '--regions',
  replicas: '--replicas',
  cpuMillicores: '--cpu',
  memoryMib: '--memory',
  port: '--port',
  env: '--env',
  environmentId: '--environment',
};

export function deployFlagFor(field: string): string | undefined {
  return FLAGS[field.split('.')[0]!];
}

export async function deployCommand(o: DeployOptions, ctx: CommandContext): Promise<number> {
  if (!o.image === !o.buildContext) throw usageError('give exactly one of --image I or --build-context DIR');
  const client = await ctx.client(o);
  const devRegions = Object.keys(client.target.devFile?.regions ?? {});
  const regions = o.regions ?? (devRegions.length ? devRegions : undefined);
  if (!regions) {
    throw usageError('no regions: pass --regions a,b', [`(without --regions the regions of the local dev stack are used, from ${client.target.devFilePath})`]);
  }
  const body = {
    ...(o.image ? { image: o.image } : { buildContext: o.buildContext }),
    regions,
    ...(o.replicas !== undefined ? { replicas: o.replicas } : {}),
    ...(o.cpu !== undefined ? { cpuMillicores: o.cpu } : {}),
    ...(o.memory !== undefined ? { memoryMib: o.memory } : {}),
    ...(o.port !== undefined ? { port: o.port } : {}),
    ...(o.env ? { env: o.env } : {}),
    ...(o.environment ? { environmentId: o.environment } : {}),
  };
  const created = await client.post<{ id: string; status: string }>('/v1/deployments', body);
  if (!o.wait) {
    ctx.io.out(o.json ? `${JSON.stringify(created, null, 2)}\n` : `${created.id}\n`);
    return EXIT_OK;
  }
  if (!o.json) ctx.io.out(`created deployment ${created.id} (${regions.join(', ')})\n`);
  return followDeployment(ctx, client, created.id, { json: Boolean(o.json), timeoutMs: o.timeout });
}
