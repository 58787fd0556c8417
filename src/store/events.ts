// Live events for the WebSocket (/v1/events) travel through Postgres NOTIFY, so a status change
// made by a workflow on any ctrl replica reaches clients connected to every replica. Published
// inside the writer's transaction, an event is delivered at commit and never for a rollback.
import type { Queryable, Sql } from './db';
import type { LiveEvent } from '../live-events';

export const EVENTS_CHANNEL = 'unkey_events';

/** The contract's one definition is in the kernel, so clients share it without importing the store. */
export type { LiveEvent };

/**
 * PostgreSQL refuses a NOTIFY payload of 8000 bytes or more, and the refusal fails the whole
 * transaction: the status write that published the event would be lost with it. 7,900 leaves
 * room for nothing but margin.
 */
export const MAX_PAYLOAD_BYTES = 7_900;
export const TRUNCATED_MARK = '… (truncated)';
/** The free-text fields that can grow without bound (a failed build, a pod's reason). */
const FREE_TEXT = ['error', 'reason'] as const;

const bytes = (s: string) => Buffer.byteLength(s);

/** The longest prefix of `v` (whole characters) whose JSON encoding fits in `budget` bytes. */
function fitPrefix(v: string, budget: number): string {
  const chars = Array.from(v);
  let lo = 0;
  let hi = chars.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytes(JSON.stringify(chars.slice(0, mid).join(''))) <= budget) lo = mid;
    else hi = mid - 1;
  }
  return chars.slice(0, lo).join('');
}

/**
 * The event as a NOTIFY payload under the limit: a long free-text field is cut and marked (the
 * row keeps the whole text; the API shows it). Never throws.
 */
export function eventPayload(event: LiveEvent): string {
  let json = JSON.stringify(event);
  if (bytes(json) <= MAX_PAYLOAD_BYTES) return json;
  const e = { ...event } as Record<string, unknown>;
  for (const field of FREE_TEXT) {
    const v = e[field];
    if (typeof v !== 'string') continue;
    const others = bytes(json) - bytes(JSON.stringify(v));
    const budget = MAX_PAYLOAD_BYTES - others - bytes(JSON.stringify(TRUNCATED_MARK));
    e[field] = fitPrefix(v, Math.max(2, budget)) + TRUNCATED_MARK;
    json = JSON.stringify(e);
    if (bytes(json) <= MAX_PAYLOAD_BYTES) return json;
  }
  // Only ids and counts are left, which are small by construction; keep the type so listeners
  // still learn that something changed.
  return JSON.stringify({ type: event.type, truncated: true });
}

export async function publishEvent(q: Queryable, event: LiveEvent): Promise<void> {
  await q`SELECT pg_notify(${EVENTS_CHANNEL}, ${eventPayload(event)})`;
}

/** Many events in one statement (status reports touch many resources at once). */
export async function publishEvents(q: Queryable, list: LiveEvent[]): Promise<void> {
  if (list.length === 0) return;
  await q`SELECT pg_notify(${EVENTS_CHANNEL}, e) FROM unnest(${list.map(eventPayload)}::text[]) AS e`;
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
