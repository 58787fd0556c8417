// `unkey-infra workspaces|projects|environments ls|create|get|delete`: thin views over the
// tenancy routes (/v1/workspaces, /v1/projects, /v1/environments). --json prints the API's
// answer unchanged. The token may be the admin token or an API key (`uik_…`).
import { CliError, EXIT_OK } from '../errors';
import { table } from '../render';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';

const enc = encodeURIComponent;
const printJson = (ctx: CommandContext, value: unknown) => ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);

interface Row {
  id: string;
  name?: string;
  slug?: string;
  workspaceId?: string;
  projectId?: string;
  regions?: string[];
  hostname?: string;
  createdAt: string;
}

export type TenancyKind = 'workspaces' | 'projects' | 'environments';

function rowsTable(kind: TenancyKind, rows: Row[]): string {
  if (rows.length === 0) return `no ${kind}\n`;
  if (kind === 'environments') return table(['ID', 'SLUG', 'REGIONS', 'HOSTNAME', 'CREATED'], rows.map((r) => [r.id, r.slug ?? '-', r.regions?.join(',') || '-', r.hostname ?? '-', r.createdAt]));
  return table(['ID', 'NAME', 'CREATED'], rows.map((r) => [r.id, r.name ?? '-', r.createdAt]));
}

/** Where a kind's list and create live: projects under a workspace, environments under a project. */
function collection(kind: TenancyKind, o: { workspace?: string; project?: string }): string {
  if (kind === 'workspaces') return '/v1/workspaces';
  if (kind === 'projects') {
    if (!o.workspace) throw new CliError('ERR_CLI_USAGE', 'projects need --workspace ID');
    return `/v1/workspaces/${enc(o.workspace)}/projects`;
  }
  if (!o.project) throw new CliError('ERR_CLI_USAGE', 'environments need --project ID');
  return `/v1/projects/${enc(o.project)}/environments`;
}

export async function tenancyLs(kind: TenancyKind, o: JsonFlag & { workspace?: string; project?: string }, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).get<Record<TenancyKind, Row[]>>(collection(kind, o));
  if (o.json) printJson(ctx, r);
  else ctx.io.out(rowsTable(kind, r[kind]));
  return EXIT_OK;
}

export interface CreateFlags extends JsonFlag {
  workspace?: string;
  project?: string;
  id?: string;
  name?: string;
  slug?: string;
  regions?: string[];
  hostname?: string;
}

export async function tenancyCreate(kind: TenancyKind, o: CreateFlags, ctx: CommandContext): Promise<number> {
  const body =
    kind === 'environments'
      ? { id: o.id, slug: o.slug, regions: o.regions, hostname: o.hostname }
      : { id: o.id, name: o.name };
  const r = await (await ctx.client(o)).post<Row>(collection(kind, o), JSON.parse(JSON.stringify(body)));
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`${r.id}\n`);
  return EXIT_OK;
}

export async function tenancyGet(kind: TenancyKind, id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).get<Row>(`/v1/${kind}/${enc(id)}`);
  if (o.json) printJson(ctx, r);
  else ctx.io.out(rowsTable(kind, [r]));
  return EXIT_OK;
}

export async function tenancyDelete(kind: TenancyKind, id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).request<{ id: string; removed: Record<string, number> }>('DELETE', `/v1/${kind}/${enc(id)}`);
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`deleted ${r.id} (${Object.entries(r.removed).map(([k, v]) => `${v} ${k}`).join(', ')} removed)\n`);
  return EXIT_OK;
}
