// `unkey-infra keys create|ls|revoke` and `unkey-infra audit ls`: scoped API keys and the audit
// trail over /v1/keys and /v1/audit. A created key is printed once; ctrl keeps only its hash.
import { CliError, EXIT_OK } from '../errors';
import { clip, table } from '../render';
import type { ApiKey } from '../api.gen';
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

export async function keysLs(o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).get('/v1/keys');
  if (o.json) printJson(ctx, r);
  else if (r.keys.length === 0) ctx.io.out('no keys\n');
  else {
    const scope = (s: ApiKey['scope']) => [s.workspaceId, s.projectId, s.environmentId].filter(Boolean).join('/');
    ctx.io.out(table(['ID', 'NAME', 'SCOPE', 'PERMISSIONS', 'EXPIRES', 'REVOKED'], r.keys.map((k) => [k.id, clip(k.name, 30), scope(k.scope), k.permissions.join(','), k.expiresAt ?? '-', k.revokedAt ?? '-'])));
  }
  return EXIT_OK;
}

export async function keysRevoke(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).delete('/v1/keys/{id}', { path: { id } });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`revoked ${r.id}\n`);
  return EXIT_OK;
}

export async function auditLs(o: JsonFlag & { actor?: string; target?: string; action?: string; since?: string; limit?: number; cursor?: string }, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).get('/v1/audit', { query: { actor: o.actor, target: o.target, action: o.action, since: o.since, limit: o.limit, cursor: o.cursor } });
  if (o.json) printJson(ctx, r);
  else if (r.entries.length === 0) ctx.io.out('no audit entries\n');
  else {
    const rows = r.entries.map((e) => [e.at, `${e.actor.type}:${e.actor.id ?? '-'}`, e.action, e.target ?? '-', e.outcome, e.sourceIp ?? '-']);
    ctx.io.out(table(['AT', 'ACTOR', 'ACTION', 'TARGET', 'OUTCOME', 'SOURCE'], rows));
    if (r.next) ctx.io.out(`more: --cursor ${r.next}\n`);
  }
  return EXIT_OK;
}
