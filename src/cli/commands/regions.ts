// `unkey-infra regions ls`: every region with its agent's status, last sign of life, lag and
// leader (GET /v1/regions). --json prints the API's answer unchanged.
import { EXIT_OK } from '../errors';
import { age, table } from '../render';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';

/** One region as GET /v1/regions returns it (src/workflow/regions.ts#RegionView). */
export interface RegionView {
  name: string;
  status: 'online' | 'offline' | 'never_seen';
  lastSeenAt: string | null;
  agent: { id: string | null; version: string | null; leader: boolean };
  lag: { changes: number; seconds: number };
  lastFullSyncAt: string | null;
  objects: Record<string, number>;
}

export function regionsTable(list: RegionView[], now: number): string {
  if (list.length === 0) return 'no regions (a region exists once it has an agent token: `unkey-infra ctrl tokens create --region R`)\n';
  const rows = list.map((r) => [
    r.name,
    r.status,
    age(r.lastSeenAt, now),
    r.status === 'never_seen' ? '-' : `${r.lag.changes} changes / ${r.lag.seconds}s`,
    r.agent.id ? `${r.agent.id}${r.agent.leader ? '' : ' (standby)'}` : '-',
    r.agent.version ?? '-',
    age(r.lastFullSyncAt, now),
  ]);
  return table(['REGION', 'STATUS', 'LAST SEEN', 'LAG', 'LEADER', 'VERSION', 'LAST FULL SYNC'], rows);
}

export async function regionsLs(o: JsonFlag, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const list = await client.get<RegionView[]>('/v1/regions');
  if (o.json) ctx.io.out(`${JSON.stringify(list, null, 2)}\n`);
  else ctx.io.out(regionsTable(list, ctx.now()));
  return EXIT_OK;
}
