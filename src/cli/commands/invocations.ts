// `unkey-infra invocations ls|show|cancel`: the workflow engine's operator views.
import { EXIT_OK } from '../errors';
import type { InvocationDetail, InvocationSummary } from '../api-types';
import { invocationDetail, invocationsTable } from '../render';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';

export async function invocationsLs(o: JsonFlag & { status?: string; target?: string; limit?: number }, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).get<{ invocations: InvocationSummary[] }>('/v1/invocations', { status: o.status, target: o.target, limit: o.limit });
  if (o.json) ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else ctx.io.out(invocationsTable(r.invocations, ctx.now()));
  return EXIT_OK;
}

export async function invocationsShow(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).get<InvocationDetail>(`/v1/invocations/${encodeURIComponent(id)}`);
  if (o.json) ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else ctx.io.out(invocationDetail(r, ctx.now()));
  return EXIT_OK;
}

export async function invocationsCancel(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post<{ id: string; status: string }>(`/v1/invocations/${encodeURIComponent(id)}/cancel`);
  if (o.json) ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else ctx.io.out(`invocation ${r.id}: cancel requested (now ${r.status})\n`);
  return EXIT_OK;
}
