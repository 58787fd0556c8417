// `unkey-infra sentinels ls|deploy`: the per-environment, per-region proxies. deploy waits for
// SentinelService's READY/FAILED answer (the server bounds the wait) unless --no-wait.
import { EXIT_FAILED, EXIT_OK } from '../errors';
import { sentinelColumns } from '../columns';
import { printList, type ListFlags } from './list';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';

export async function sentinelsLs(o: ListFlags & { environment?: string; region?: string; limit?: number; after?: string }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  return printList(ctx, client, o, {
    fetch: () => client.get('/v1/sentinels', { query: { environmentId: o.environment, region: o.region, limit: o.limit, after: o.after } }),
    rows: (r) => r.sentinels,
    columns: sentinelColumns,
    empty: 'no sentinels',
    footer: (r) => (r.next ? `more: --after ${r.next}\n` : ''),
    watch: { events: 'sentinel', key: (s) => s.id, item: (s) => s },
  });
}

export async function sentinelsDeploy(id: string, o: JsonFlag & { image?: string; replicas?: number; wait?: boolean }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const body = { ...(o.image ? { image: o.image } : {}), ...(o.replicas !== undefined ? { replicas: o.replicas } : {}) };
  const wait = o.wait !== false;
  // timeoutMs 0: the answer comes when SentinelService settles, bounded by its own timeout.
  const r = await client.post('/v1/sentinels/{id}/deploy', { path: { id }, body, ...(wait ? { timeoutMs: 0 } : { query: { wait: 'false' } }) });
  if (o.json) ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else if (!wait) ctx.io.out(`sentinel ${id}: deploy started (invocation ${r.invocationId})\n`);
  else ctx.io.out(`sentinel ${id}: ${r.status}${r.image ? ` on ${r.image}` : ''}${r.reason ? `: ${r.reason}` : ''}\n`);
  if (wait && r.status === 'FAILED') {
    if (!o.json) ctx.io.err(`unkey-infra: sentinel ${id} failed to deploy${r.reason ? `: ${r.reason}` : ''}\n`);
    return EXIT_FAILED;
  }
  return EXIT_OK;
}
