// `unkey-infra regions ls`: every region with its agent's status, last sign of life, lag,
// leader, the drift its krane healed and the desired states its cluster refused, each with the
// reason under the table (GET /v1/regions). --json prints the API's answer unchanged.
import { EXIT_OK } from '../errors';
import { age, table } from '../render';
import type { CommandContext } from './context';
import type { JsonFlag } from './deployments';

import type { RegionView } from '../api.gen';

function driftCell(d: RegionView['drift'], now: number): string {
  if (d.repaired === 0) return '0';
  return `${d.repaired} (last ${d.lastObject ?? '?'} ${age(d.lastAt, now)})`;
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
    driftCell(r.drift, now),
    String(r.failures.length),
  ]);
  const reasons = list.flatMap((r) => r.failures.map((f) => `${r.name}: ${f.resourceType}/${f.resourceId} ${f.code}: ${f.reason}`));
  const out = table(['REGION', 'STATUS', 'LAST SEEN', 'LAG', 'LEADER', 'VERSION', 'LAST FULL SYNC', 'DRIFT REPAIRED', 'FAILURES'], rows);
  return reasons.length ? `${out}\nfailures:\n${reasons.map((l) => `  ${l}`).join('\n')}\n` : out;
}

export async function regionsLs(o: JsonFlag, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const list = await client.get('/v1/regions');
  if (o.json) ctx.io.out(`${JSON.stringify(list, null, 2)}\n`);
  else ctx.io.out(regionsTable(list, ctx.now()));
  return EXIT_OK;
}
