// `unkey-infra keys create|ls|revoke` and `unkey-infra audit ls`: scoped API keys and the audit
// trail over /v1/keys and /v1/audit. A created key is printed once; ctrl keeps only its hash.
import { CliError, EXIT_OK } from '../errors';
import { auditColumns, keyColumns } from '../columns';
import { printList, type ListFlags } from './list';
import type { BodyOf } from '../api-paths';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';

const printJson = (ctx: CommandContext, value: unknown) => ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);


/** `--scope WORKSPACE[/PROJECT[/ENVIRONMENT]]` → the API's scope object. */
export function parseScope(value: string): { workspaceId: string; projectId?: string; environmentId?: string } {
  const parts = value.split('/');
  if (parts.length > 3 || parts.some((p) => !p)) throw new CliError('ERR_CLI_USAGE', `--scope must be WORKSPACE[/PROJECT[/ENVIRONMENT]], got "${value}"`);
  const [workspaceId, projectId, environmentId] = parts as [string, string?, string?];
  return { workspaceId, ...(projectId ? { projectId } : {}), ...(environmentId ? { environmentId } : {}) };
}

export async function keysCreate(o: JsonFlag & { scope: string; permissions: string[]; name?: string; expiresIn?: number }, ctx: CommandContext): Promise<number> {
  const body = {
    name: o.name ?? `cli key ${new Date(ctx.now()).toISOString()}`,
    scope: parseScope(o.scope),
    permissions: o.permissions,
    ...(o.expiresIn ? { expiresAt: new Date(ctx.now() + o.expiresIn).toISOString() } : {}),
  };
  // Permission names go as given: the API names any it does not know.
  const r = await (await ctx.client(o)).post('/v1/keys', { body: body as BodyOf<'/v1/keys', 'post'> });
  if (o.json) {
    printJson(ctx, r);
    return EXIT_OK;
  }
  // The key alone on stdout (for `$(…)`), the note on stderr.
  ctx.io.out(`${r.key}\n`);
  ctx.io.err(`key ${r.id} created; it is shown only now, ctrl keeps its hash\n`);
  return EXIT_OK;
}

export async function keysLs(o: ListFlags, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  return printList(ctx, client, o, { fetch: () => client.get('/v1/keys'), rows: (r) => r.keys, columns: keyColumns, empty: 'no keys' });
}

export async function keysRevoke(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).delete('/v1/keys/{id}', { path: { id } });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`revoked ${r.id}\n`);
  return EXIT_OK;
}

export async function auditLs(o: ListFlags & { actor?: string; target?: string; action?: string; since?: string; limit?: number; cursor?: string }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  return printList(ctx, client, o, {
    fetch: () => client.get('/v1/audit', { query: { actor: o.actor, target: o.target, action: o.action, since: o.since, limit: o.limit, cursor: o.cursor } }),
    rows: (r) => r.entries,
    columns: auditColumns,
    empty: 'no audit entries',
    footer: (r) => (r.next ? `more: --cursor ${r.next}\n` : ''),
  });
}
