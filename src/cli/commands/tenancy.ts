// `unkey-infra workspaces|projects|environments ls|create|get|delete`: thin views over the
// tenancy routes (/v1/workspaces, /v1/projects, /v1/environments). --json prints the API's
// answer unchanged. The token may be the admin token or an API key (`uik_…`).
import { CliError, EXIT_OK } from '../errors';
import { renderList } from '../output';
import { environmentColumns, workspaceColumns } from '../columns';
import { printList, type ListFlags } from './list';
import type { Environment, Project, Workspace } from '../api.gen';
import type { ApiClient } from '../client';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';

const printJson = (ctx: CommandContext, value: unknown) => ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);

type Row = Workspace | Project | Environment;

export type TenancyKind = 'workspaces' | 'projects' | 'environments';

/** One row as `ls` shows it. */
function rowTable(kind: TenancyKind, r: Row, now: number): string {
  if (kind === 'environments') return renderList('table', r, [r as Environment], environmentColumns, now, '');
  return renderList('table', r, [r as Workspace | Project], workspaceColumns, now, '');
}

/** The parent a kind lives under: projects under a workspace, environments under a project. */
function parent(kind: 'projects' | 'environments', o: { workspace?: string; project?: string }): string {
  const id = kind === 'projects' ? o.workspace : o.project;
  if (!id) throw new CliError('ERR_CLI_USAGE', kind === 'projects' ? 'projects need --workspace ID' : 'environments need --project ID');
  return id;
}

/** A kind's list, as the API answers it (`{ workspaces }`, `{ projects }`, `{ environments }`). */
async function list(client: ApiClient, kind: TenancyKind, o: { workspace?: string; project?: string }): Promise<Record<string, Row[]>> {
  if (kind === 'workspaces') return client.get('/v1/workspaces');
  if (kind === 'projects') return client.get('/v1/workspaces/{id}/projects', { path: { id: parent(kind, o) } });
  return client.get('/v1/projects/{id}/environments', { path: { id: parent(kind, o) } });
}

export async function tenancyLs(kind: TenancyKind, o: ListFlags & { workspace?: string; project?: string }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const fetch = () => list(client, kind, o);
  const empty = `no ${kind}`;
  if (kind === 'environments') return printList(ctx, client, o, { fetch, rows: (r) => (r.environments ?? []) as Environment[], columns: environmentColumns, empty });
  return printList(ctx, client, o, { fetch, rows: (r) => (r[kind] ?? []) as (Workspace | Project)[], columns: workspaceColumns, empty });
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
  const client = await ctx.client(o);
  // Absent flags leave the field out (the API's defaults apply); values are the API's to judge.
  const given = <T extends object>(b: T): T => JSON.parse(JSON.stringify(b)) as T;
  const r: Row =
    kind === 'workspaces'
      ? await client.post('/v1/workspaces', { body: given({ id: o.id, name: o.name! }) })
      : kind === 'projects'
        ? await client.post('/v1/workspaces/{id}/projects', { path: { id: parent(kind, o) }, body: given({ id: o.id, name: o.name! }) })
        : await client.post('/v1/projects/{id}/environments', { path: { id: parent(kind, o) }, body: given({ id: o.id, slug: o.slug!, regions: o.regions, hostname: o.hostname }) });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`${r.id}\n`);
  return EXIT_OK;
}

export async function tenancyGet(kind: TenancyKind, id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const r: Row =
    kind === 'workspaces'
      ? await client.get('/v1/workspaces/{id}', { path: { id } })
      : kind === 'projects'
        ? await client.get('/v1/projects/{id}', { path: { id } })
        : await client.get('/v1/environments/{id}', { path: { id } });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(rowTable(kind, r, ctx.now()));
  return EXIT_OK;
}

export async function tenancyDelete(kind: TenancyKind, id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const path = { path: { id } };
  const r =
    kind === 'workspaces' ? await client.delete('/v1/workspaces/{id}', path) : kind === 'projects' ? await client.delete('/v1/projects/{id}', path) : await client.delete('/v1/environments/{id}', path);
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`deleted ${r.id} (${Object.entries(r.removed).map(([k, v]) => `${v} ${k}`).join(', ')} removed)\n`);
  return EXIT_OK;
}
