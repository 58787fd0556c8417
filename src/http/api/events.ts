// GET /v1/events: a WebSocket of live JSON events (deployment.status, deployment.region,
// sentinel.status, rollout.wave). Events come from Postgres NOTIFY, so a client connected to
// any ctrl replica sees changes made by workflows on every replica. One LISTEN per process,
// fanned out in memory: database load does not grow with the number of clients.
// Filters: ?deploymentId=…, ?type=deployment.status (prefix match, e.g. ?type=deployment).
// The admin token comes as a header or as ?token= (checked in index.ts before the upgrade).
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from '@fastify/websocket';
import { events, type Sql } from '../../store';
import type { LiveEvent } from '../../store/events';
import { eventConcerns } from '../../live-events';
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

export function eventRoutes(deps: { hub: EventHub }) {
  return (app: FastifyInstance) => {
    app.get(
      EVENTS_PATH,
      {
        websocket: true,
        // Validated before the upgrade, so a bad query is a plain HTTP 400.
        preValidation: async (req) => void parse(EventsQuery, req.query, 'query'),
      },
      (socket: WebSocket, req) => {
        const q = parse(EventsQuery, req.query, 'query');
        const unsubscribe = deps.hub.subscribe((e) => {
          if (q.deploymentId && !eventConcerns(e, q.deploymentId)) return;
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
      },
    );
  };
}
