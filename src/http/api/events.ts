// GET /v1/events: a WebSocket of live JSON events (deployment.status, deployment.region,
// sentinel.status, rollout.wave). Events come from Postgres NOTIFY, so a client connected to
// any ctrl replica sees changes made by workflows on every replica. One LISTEN per process,
// fanned out in memory: database load does not grow with the number of clients.
// Filters: ?deploymentId=…, ?type=deployment.status (prefix match, e.g. ?type=deployment).
// The credential comes as a header, the subprotocol or ?token= (checked by the guard before the
// upgrade). A key's socket carries only events of its scope (each event's deployment, sentinel or
// environment is looked up once and remembered: scopes never change), `region.status` only with
// regions.read, and no fleet rollout events; it is closed at once when the key is revoked.
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from '@fastify/websocket';
import { events, tenancy, type Sql } from '../../store';
import type { LiveEvent } from '../../store/events';
import { eventConcerns } from '../../live-events';
import { LRUCache } from 'lru-cache';
import type { KeyAuth } from '../keys';
import { can, inScope, type Principal } from '../permissions';
import { principalOf } from './scope';
import { EventsQuery } from './schemas';
import { parse } from './parse';

export const EVENTS_PATH = '/v1/events';

export interface EventHub {
  subscribe(fn: (e: LiveEvent) => void): () => void;
  close(): Promise<void>;
}

export async function createEventHub(sql: Sql): Promise<EventHub> {
  const subscribers = new Set<(e: LiveEvent) => void>();
  const unlisten = await events.listenEvents(sql, (e) => {
    for (const fn of subscribers) fn(e);
  });
  return {
    subscribe(fn) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
    close: unlisten,
  };
}

/**
 * A client that reads slower than events arrive is disconnected once this much is queued,
 * rather than letting its buffer grow without bound in ctrl's memory.
 */
const MAX_BUFFERED_BYTES = 1 << 20;

/** Scopes remembered by id (deployments, sentinels, environments): one lookup per id, not per event. */
const SCOPE_CACHE_MAX = 50_000;
/** WebSocket close code for a revoked credential (4000-4999: the application's own). */
const CLOSE_REVOKED = 4401;

type ScopeRow = { workspaceId: string; projectId: string; environmentId: string };

/** Whether a key may see an event; reads the scope of what it names (cached). */
function eventFilter(sql: Sql, cache: LRUCache<string, ScopeRow>) {
  const scopeOf = async (id: string, env: boolean): Promise<ScopeRow | false> => {
    const hit = cache.get(id);
    if (hit) return hit;
    const row = env ? await tenancy.getEnvironment(sql, id) : (await tenancy.scopesOf(sql, [id])).get(id);
    if (!row) return false;
    // Only what exists is remembered: a scope never changes, an absence may end.
    const v = { workspaceId: row.workspaceId, projectId: row.projectId, environmentId: row.environmentId };
    cache.set(id, v);
    return v;
  };
  return async (p: Principal, e: LiveEvent): Promise<boolean> => {
    if (p.type === 'admin') return true;
    if (e.type === 'region.status') return can(p, 'regions.read');
    const named = 'deploymentId' in e ? scopeOf(e.deploymentId, false) : 'sentinelId' in e ? scopeOf(e.sentinelId, false) : 'environmentId' in e ? scopeOf(e.environmentId, true) : null;
    const s = named ? await named : false;
    return !!s && inScope(p, s);
  };
}

export function eventRoutes(deps: { hub: EventHub; keys?: KeyAuth; workflows: { commands: { sql: Sql } } }) {
  const allowed = eventFilter(deps.workflows.commands.sql, new LRUCache({ max: SCOPE_CACHE_MAX }));
  return (app: FastifyInstance) => {
    app.get(
      EVENTS_PATH,
      {
        websocket: true,
        config: { permission: 'deployments.read' },
        // Validated before the upgrade, so a bad query is a plain HTTP 400.
        preValidation: async (req) => void parse(EventsQuery, req.query, 'query'),
      },
      (socket: WebSocket, req) => {
        const q = parse(EventsQuery, req.query, 'query');
        const p = principalOf(req);
        const send = (e: LiveEvent) => {
          if (socket.bufferedAmount > MAX_BUFFERED_BYTES) {
            socket.close(1013, 'client too slow');
            return;
          }
          socket.send(JSON.stringify(e));
        };
        // A key's events pass a lookup; they queue behind each other so they keep their order.
        let queue = Promise.resolve();
        const unsubscribe = deps.hub.subscribe((e) => {
          if (q.deploymentId && !eventConcerns(e, q.deploymentId)) return;
          if (q.type && !e.type.startsWith(q.type)) return;
          if (p.type === 'admin') return send(e);
          queue = queue.then(async () => {
            if (await allowed(p, e).catch(() => false)) send(e);
          });
        });
        const release = p.type === 'key' && deps.keys ? deps.keys.hold(p.id, () => (socket.close(CLOSE_REVOKED, 'credential revoked'), setTimeout(() => socket.terminate(), 1_000).unref())) : () => {};
        const done = () => (unsubscribe(), release());
        socket.on('close', done);
        socket.on('error', done);
        socket.send(JSON.stringify({ type: 'hello' }));
      },
    );
  };
}
