// `unkey-infra deployments versions|rollback --to-version|quarantine ls|rm` and `features
// get|set` (issue 25): an environment's history, rollback by version, its quarantined images,
// and a workspace's feature flags. Thin views over the API; --json prints its answer unchanged.
import { EXIT_OK, usageError } from '../errors';
import { table } from '../render';
import { quarantineColumns, versionColumns } from '../columns';
import { printList, type ListFlags } from './list';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';
import { followDeployment } from './follow';

/** The environment a command names, `default` when it names none. */
const env = (id: string | undefined) => ({ id: id ?? 'default' });
const printJson = (ctx: CommandContext, value: unknown) => ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);

export async function deploymentsVersions(o: ListFlags & { environment?: string; limit?: number }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  return printList(ctx, client, o, {
    fetch: () => client.get('/v1/environments/{id}/versions', { path: env(o.environment), query: { limit: o.limit } }),
    rows: (r) => r.versions,
    columns: versionColumns,
    empty: 'no versions',
    // A version's status moves with its deployment's events.
    watch: { events: 'deployment', key: (v) => v.deploymentId, item: (v) => v },
  });
}

export async function deploymentsRollbackToVersion(
  o: JsonFlag & { environment?: string; toVersion: string; force?: boolean; wait?: boolean; timeout?: number },
  ctx: CommandContext,
): Promise<number> {
  const client = await ctx.client(o);
  const r = await client.post('/v1/environments/{id}/rollback', { path: env(o.environment), body: { version: o.toVersion, ...(o.force ? { force: true } : {}) } });
  if (!o.wait) {
    ctx.io.out(o.json ? `${JSON.stringify(r, null, 2)}\n` : `${r.id}\n`);
    return EXIT_OK;
  }
  if (!o.json) ctx.io.out(`created deployment ${r.id} (${r.version}) from version ${o.toVersion} (${r.rollbackOf})\n`);
  return followDeployment(ctx, client, r.id, { json: Boolean(o.json), timeoutMs: o.timeout });
}

export async function quarantineLs(o: ListFlags & { environment?: string }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  return printList(ctx, client, o, {
    fetch: () => client.get('/v1/environments/{id}/quarantine', { path: env(o.environment) }),
    rows: (r) => r.images,
    columns: quarantineColumns,
    empty: 'no quarantined images',
    // An image is quarantined as its deployment is rolled back (a deployment event); a release
    // has no event and shows at the next periodic read.
    watch: { events: 'deployment', key: (q) => q.image, item: (q) => q },
  });
}

export async function quarantineRm(image: string, o: JsonFlag & { environment?: string }, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).delete('/v1/environments/{id}/quarantine/{image}', { path: { ...env(o.environment), image } });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`released ${r.image}\n`);
  return EXIT_OK;
}

const FLAG_NAMES = ['multiRegion', 'autoScaling', 'blueGreen', 'canary'];

/** `canary=off multiRegion=on` → { canary: false, multiRegion: true }. */
export function parseFeatureSettings(args: string[]): Record<string, boolean> {
  if (args.length === 0) throw usageError('name at least one flag, e.g. canary=off', [`flags: ${FLAG_NAMES.join(', ')}`]);
  const out: Record<string, boolean> = {};
  for (const a of args) {
    const m = /^([A-Za-z]+)=(on|off|true|false)$/.exec(a);
    if (!m || !FLAG_NAMES.includes(m[1]!)) throw usageError(`expected FLAG=on|off, got "${a}"`, [`flags: ${FLAG_NAMES.join(', ')}`]);
    out[m[1]!] = m[2] === 'on' || m[2] === 'true';
  }
  return out;
}

const showFeatures = (f: Record<string, boolean>) => table(['FEATURE', 'STATE'], Object.entries(f).map(([k, v]) => [k, v ? 'on' : 'off']));

export async function featuresGet(workspace: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).get('/v1/workspaces/{id}/features', { path: { id: workspace } });
  ctx.io.out(o.json ? `${JSON.stringify(r, null, 2)}\n` : showFeatures(r.features));
  return EXIT_OK;
}

export async function featuresSet(workspace: string, settings: string[], o: JsonFlag, ctx: CommandContext): Promise<number> {
  const body = parseFeatureSettings(settings);
  const r = await (await ctx.client(o)).put('/v1/workspaces/{id}/features', { path: { id: workspace }, body });
  ctx.io.out(o.json ? `${JSON.stringify(r, null, 2)}\n` : showFeatures(r.features));
  return EXIT_OK;
}
