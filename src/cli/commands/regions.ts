// `unkey-infra regions ls`: every region with its agent's status, last sign of life, lag,
// leader, the drift its krane healed and the desired states its cluster refused, each with the
// reason under the table (GET /v1/regions). -o json|yaml prints the API's answer unchanged;
// --watch follows region.status events.
import type { RegionView } from '../api.gen';
import { regionColumns } from '../columns';
import type { CommandContext } from './context';
import { printList, type ListFlags } from './list';

/** The refusals under the table, one line each with its reason. */
export function failureLines(list: RegionView[]): string {
  const reasons = list.flatMap((r) => r.failures.map((f) => `${r.name}: ${f.resourceType}/${f.resourceId} ${f.code}: ${f.reason}`));
  return reasons.length ? `\nfailures:\n${reasons.map((l) => `  ${l}`).join('\n')}\n` : '';
}

export async function regionsLs(o: ListFlags, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  return printList(ctx, client, o, {
    fetch: () => client.get('/v1/regions'),
    rows: (list) => list,
    columns: regionColumns,
    empty: 'no regions (a region exists once it has an agent token: `unkey-infra ctrl tokens create --region R`)',
    footer: failureLines,
    watch: { events: 'region', key: (r) => r.name, item: (r) => r },
  });
}
