// `unkey-infra deployments ls|get|stop|start|rollback|promote|abort`: thin views over
// /v1/deployments. --json prints the API's answer unchanged; `ls` takes -o and --watch.
import type { ApiClient, ClientFlags } from '../client';
import type { DeploymentDetail, DeploymentSummary } from '../api.gen';
import { ApiError, EXIT_OK } from '../errors';
import { deploymentColumns, type DeploymentRow } from '../columns';
import { deploymentDetail } from '../render';
import type { LiveEvent } from '../../live-events';
import type { CommandContext } from './context';
import { followDeployment } from './follow';
import { printList, type ListFlags } from './list';
import { newIdempotencyKey } from '../retry';

export interface JsonFlag extends ClientFlags {
  json?: boolean;
}

const printJson = (ctx: CommandContext, value: unknown) => ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);

/** Detail reads in flight at once for the READY column: a page of 100 is 25 rounds, never 100 requests at once. */
const READY_CONCURRENCY = 4;

/** Replicas running of those wanted, over the regions where the deployment should run. */
export function readyOf(d: DeploymentDetail): { running: number; wanted: number } {
  const running = d.topology.filter((t) => t.desiredStatus === 'running');
  // Before the deploy step writes topologies, only the request says what is wanted.
  if (d.topology.length === 0) return { running: 0, wanted: d.desiredState === 'running' ? d.replicas * d.regions.length : 0 };
  return { running: running.reduce((n, t) => n + t.running, 0), wanted: running.reduce((n, t) => n + t.wanted, 0) };
}

/**
 * Rows with READY read from each deployment's detail (the list carries no instance counts). A
 * watch calls it again and again: a detail is read again only when the deployment's summary
 * changed or a live event named it.
 */
function readyRows(client: ApiClient): (list: DeploymentSummary[], events: LiveEvent[]) => Promise<DeploymentRow[]> {
  const known = new Map<string, { summary: string; ready?: DeploymentRow['ready'] }>();
  return async (list, events) => {
    const named = new Set(events.flatMap((e) => ('deploymentId' in e ? [e.deploymentId] : [])));
    const stale = list.filter((d) => named.has(d.id) || known.get(d.id)?.summary !== JSON.stringify(d));
    const queue = [...stale];
    await Promise.all(
      Array.from({ length: Math.min(READY_CONCURRENCY, queue.length) }, async () => {
        for (let d = queue.shift(); d; d = queue.shift()) {
          try {
            known.set(d.id, { summary: JSON.stringify(d), ready: readyOf(await client.get('/v1/deployments/{id}', { path: { id: d.id } })) });
          } catch (err) {
            // Gone since the list was read (a deleted environment): no count to show.
            if (!(err instanceof ApiError && err.status === 404)) throw err;
            known.set(d.id, { summary: JSON.stringify(d) });
          }
        }
      }),
    );
    return list.map((d) => ({ d, ...(known.get(d.id)?.ready ? { ready: known.get(d.id)!.ready! } : {}) }));
  };
}

export async function deploymentsLs(o: ListFlags & { environment?: string; limit?: number }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const rows = readyRows(client);
  return printList(ctx, client, o, {
    fetch: () => client.get('/v1/deployments', { query: { environmentId: o.environment, limit: o.limit } }),
    rows: (r, events) => rows(r.deployments, events),
    columns: deploymentColumns,
    empty: 'no deployments',
    watch: { events: 'deployment', key: (r) => r.d.id, item: (r) => r.d },
  });
}

export async function deploymentsGet(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const d = await (await ctx.client(o)).get('/v1/deployments/{id}', { path: { id } });
  if (o.json) printJson(ctx, d);
  else ctx.io.out(deploymentDetail(d, ctx.now()));
  return EXIT_OK;
}

export async function deploymentsSetDesired(id: string, desired: 'stop' | 'start', o: JsonFlag, ctx: CommandContext): Promise<number> {
  // Level-triggered: sending it twice leaves the same desired state, so it rides out a failover.
  const r = await (await ctx.client(o)).post(desired === 'stop' ? '/v1/deployments/{id}/stop' : '/v1/deployments/{id}/start', { path: { id }, retry: true });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`deployment ${r.id}: desired state ${r.desiredState}${r.changed ? '' : ' (already)'}\n`);
  return EXIT_OK;
}

export async function deploymentsRollback(id: string, o: JsonFlag & { wait?: boolean; timeout?: number }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const r = await client.post('/v1/deployments/{id}/rollback', { path: { id }, retry: true, idempotencyKey: newIdempotencyKey() });
  if (!o.wait) {
    if (o.json) printJson(ctx, r);
    else ctx.io.out(`${r.id}\n`);
    return EXIT_OK;
  }
  if (!o.json) ctx.io.out(`created deployment ${r.id} from the config of ${r.rolledBackFrom}\n`);
  return followDeployment(ctx, client, r.id, { json: Boolean(o.json), timeoutMs: o.timeout });
}

export async function deploymentsPromote(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post('/v1/deployments/{id}/promote', { path: { id } });
  if (o.json) printJson(ctx, r);
  else if (r.promoting) ctx.io.out(`promoting ${r.deploymentId}: its canary or blue-green skips to 100%\n`);
  else ctx.io.out(`promoted ${r.deploymentId}${r.hostnames.length ? `\n${r.hostnames.map((h) => `  ${h}`).join('\n')}` : ''}\n`);
  return EXIT_OK;
}

export async function deploymentsAbort(id: string, o: JsonFlag, ctx: CommandContext): Promise<number> {
  const r = await (await ctx.client(o)).post('/v1/deployments/{id}/abort', { path: { id } });
  if (o.json) printJson(ctx, r);
  else ctx.io.out(`aborting ${r.deploymentId}: traffic goes back to the stable deployment\n`);
  return EXIT_OK;
}
