// GET /v1/events: a WebSocket of live JSON events (deployment.status, deployment.region,
// sentinel.status, rollout.wave). Events come from Postgres NOTIFY, so a client connected to
// any ctrl replica sees changes made by workflows on every replica. One LISTEN per process,
// fanned out in memory: database load does not grow with the number of clients.
// Filters: ?deploymentId=…, ?type=deployment.status (prefix match, e.g. ?type=deployment).
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from '@fastify/websocket';
import { events, type Sql } from '../../store';
import type { LiveEvent } from '../../store/events';

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

export function eventRoutes(deps: { hub: EventHub }) {
  return (app: FastifyInstance) => {
    app.get('/v1/events', { websocket: true }, (socket: WebSocket, req) => {
      const q = req.query as { deploymentId?: string; type?: string };
      const unsubscribe = deps.hub.subscribe((e) => {
        if (q.deploymentId && (!('deploymentId' in e) || e.deploymentId !== q.deploymentId)) return;
        if (q.type && !e.type.startsWith(q.type)) return;
        if (socket.bufferedAmount > MAX_BUFFERED_BYTES) {
          socket.close(1013, 'client too slow');
          return;
        }
        socket.send(JSON.stringify(e));
      });
      socket.on('close', unsubscribe);
      socket.on('error', unsubscribe);
      socket.send(JSON.stringify({ type: 'hello' }));
    });
  };
}
