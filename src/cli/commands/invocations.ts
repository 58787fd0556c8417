// `unkey-infra invocations ls|show|cancel`: the workflow engine's operator views.
import { EXIT_OK } from '../errors';
import type { QueryOf } from '../api-paths';
import { invocationDetail } from '../render';
import { invocationColumns } from '../columns';
import { printList, type ListFlags } from './list';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';

/** `--status` as the API takes it (a value outside its list is the API's 400 to report). */
type InvocationStatus = NonNullable<QueryOf<'/v1/invocations', 'get'>>['status'];

export async function invocationsLs(o: ListFlags & { status?: InvocationStatus; target?: string; limit?: number }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  return printList(ctx, client, o, {
    fetch: () => client.get('/v1/invocations', { query: { status: o.status, target: o.target, limit: o.limit } }),
    rows: (r) => r.invocations,
    columns: invocationColumns,
    empty: 'no invocations',
  });
}

export async function invocationsShow(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).get('/v1/invocations/{id}', { path: { id } });
  if (o.json) ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else ctx.io.out(invocationDetail(r, ctx.now()));
  return EXIT_OK;
}

export async function invocationsCancel(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post('/v1/invocations/{id}/cancel', { path: { id } });
  if (o.json) ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else ctx.io.out(`invocation ${r.id}: cancel requested (now ${r.status})\n`);
  return EXIT_OK;
}
