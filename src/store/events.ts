// Live events for the WebSocket (/v1/events) travel through Postgres NOTIFY, so a status change
// made by a workflow on any ctrl replica reaches clients connected to every replica. Published
// inside the writer's transaction, an event is delivered at commit and never for a rollback.
import type { Queryable, Sql } from './db';

export const EVENTS_CHANNEL = 'unkey_events';

export type LiveEvent =
  | { type: 'deployment.status'; deploymentId: string; environmentId: string; status: string; error: string | null }
  | { type: 'deployment.region'; deploymentId: string; region: string; wanted: number; running: number; failed: number; reason: string | null }
  | { type: 'sentinel.status'; sentinelId: string; region: string; deployStatus: string; health: string; runningImage: string | null }
  | { type: 'rollout.wave'; state: string; wave: number; waves: number; succeeded: number; failed: number };

export async function publishEvent(q: Queryable, event: LiveEvent): Promise<void> {
  // NOTIFY payloads are capped at 8000 bytes; events are small by construction.
  await q`SELECT pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify(event)})`;
}

/** Many events in one statement (status reports touch many resources at once). */
export async function publishEvents(q: Queryable, list: LiveEvent[]): Promise<void> {
  if (list.length === 0) return;
  await q`SELECT pg_notify(${EVENTS_CHANNEL}, e) FROM unnest(${list.map((e) => JSON.stringify(e))}::text[]) AS e`;
}

/** Subscribes to live events of every ctrl replica; resolves to an unsubscribe function. */
export async function listenEvents(sql: Sql, onEvent: (e: LiveEvent) => void): Promise<() => Promise<void>> {
  const sub = await sql.listen(EVENTS_CHANNEL, (payload) => {
    try {
      onEvent(JSON.parse(payload) as LiveEvent);
    } catch {
      // A payload we cannot parse came from an incompatible writer; dropping it is all we can do.
    }
  });
  return () => sub.unlisten();
}
