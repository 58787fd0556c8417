// GET /v1/events: a WebSocket of live JSON events (deployment.status, deployment.region,
// sentinel.status, rollout.wave). Events come from Postgres NOTIFY, so a client connected to
// any ctrl replica sees changes made by workflows on every replica. One LISTEN per process,
// fanned out in memory: database load does not grow with the number of clients.
// Filters: ?deploymentId=…, ?type=deployment.status (prefix match, e.g. ?type=deployment).
//
// The credential comes as the Authorization header or, from browsers (which cannot set
// headers on a WebSocket), as the subprotocol `base64url.bearer.<token>` (checked by the guard
// before the upgrade). Never in the URL, where access logs and browser history keep it, and
// never echoed back: the server selects `unkey-infra.events` when offered, otherwise nothing.
// A key's socket carries only events of its scope (each event's deployment, sentinel or
// environment is looked up once and remembered: scopes never change), `region.status` only with
// regions.read, and no fleet rollout events; it is closed at once when the key is revoked or expires.
//
// Limits (SECURITY.md): EVENT_SOCKETS_PER_TOKEN sockets per credential and
// EVENT_SOCKETS_PER_WORKSPACE for all of a workspace's keys together (429 past either),
// client messages up to EVENT_MAX_PAYLOAD_BYTES, and a ping every pingIntervalMs: a socket
// whose pong has not come back by the next ping is dropped, so half-open connections (a
// laptop closed, a NAT forgetting the flow) do not hold a slot for ever.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from '@fastify/websocket';
import { LRUCache } from 'lru-cache';
import { AppError } from '../../errors';
import { events, tenancy, type Sql } from '../../store';
import type { LiveEvent } from '../../store/events';
import { eventConcerns } from '../../live-events';
import { bearerToken } from '../auth';
import type { KeyAuth } from '../keys';
import { can, inScope, type Principal } from '../permissions';
import { principalOf } from './scope';
import { EventsQuery } from './schemas';
import { parse } from './parse';
import { tooSlow, type Backlog } from './slow-client';
import { SocketQuota } from './socket-quota';

export const EVENTS_PATH = '/v1/events';
/** The neutral subprotocol the server selects (the web view offers it first). */
export const EVENTS_PROTOCOL = 'unkey-infra.events';
/** Subprotocol prefix carrying a bearer token (base64url), the scheme Kubernetes uses. */
export const WS_TOKEN_PROTOCOL = 'base64url.bearer.';

/**
 * Live event sockets one credential may hold. A person has a few tabs open, a script or a
 * dashboard one socket each; 20 covers that with room, while a leaked or looping client cannot
 * pin thousands of sockets (each a fan-out target and a buffer) on one replica.
 */
export const EVENT_SOCKETS_PER_TOKEN = 20;
/**
 * Live event sockets all keys of one workspace may hold on a replica: five keys' worth of the
 * per-credential cap, so a tenant that mints keys gets no more of a replica's sockets than that.
 */
export const EVENT_SOCKETS_PER_WORKSPACE = 100;
/** Client → server messages: clients send nothing we read; 64 KiB bounds what a frame costs. */
export const EVENT_MAX_PAYLOAD_BYTES = 64 * 1024;
/**
 * Ping interval. 30 s sits below the usual idle cutoffs of load balancers and NATs (60 s and
 * up), keeping a quiet socket alive through them; a socket silent for a whole interval after a
 * ping is gone, so a dead one is dropped within two intervals.
 */
export const EVENT_PING_INTERVAL_MS = 30_000;

export interface EventSocketOptions {
  pingIntervalMs?: number;
  socketsPerToken?: number;
  socketsPerWorkspace?: number;
}

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

/** The token of a `base64url.bearer.` subprotocol, if one was offered. */
export function subprotocolToken(req: FastifyRequest): string | undefined {
  const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const p = offered.find((x) => x.startsWith(WS_TOKEN_PROTOCOL));
  return p ? Buffer.from(p.slice(WS_TOKEN_PROTOCOL.length), 'base64url').toString('utf8') : undefined;
}

/** ws's handleProtocols: ours if offered, else none; never the credential. */
export const selectProtocol = (offered: Set<string>): string | false => (offered.has(EVENTS_PROTOCOL) ? EVENTS_PROTOCOL : false);

/** Options for @fastify/websocket's ws server. */
export const websocketServerOptions = { maxPayload: EVENT_MAX_PAYLOAD_BYTES, handleProtocols: selectProtocol };

/** Scopes remembered by kind and id (deployments, sentinels, environments): one lookup per id, not per event. */
const SCOPE_CACHE_MAX = 50_000;
/** WebSocket close code for a revoked or expired credential (4000-4999: the application's own). */
const CLOSE_REVOKED = 4401;

type ScopeRow = { workspaceId: string; projectId: string; environmentId: string };

/**
 * Whether a key may see an event; reads the scope of what it names (cached). The cache is keyed by
 * kind and id: ids of different kinds live in different tables, and an environment sharing a
 * deployment's id (made before chosen ids were checked, or by hand) must not lend the
 * deployment its scope.
 */
function eventFilter(sql: Sql, cache: LRUCache<string, ScopeRow>) {
  const scopeOf = async (kind: 'deployment' | 'sentinel' | 'environment', id: string): Promise<ScopeRow | false> => {
    const key = `${kind}:${id}`;
    const hit = cache.get(key);
    if (hit) return hit;
    const row = await tenancy.scopeOfKind(sql, kind, id);
    if (!row) return false;
    // Only what exists is remembered: a scope never changes, an absence may end.
    const v = { workspaceId: row.workspaceId, projectId: row.projectId, environmentId: row.environmentId };
    cache.set(key, v);
    return v;
  };
  return async (p: Principal, e: LiveEvent): Promise<boolean> => {
    if (p.type === 'admin') return true;
    if (e.type === 'region.status') return can(p, 'regions.read');
    const named = 'deploymentId' in e ? scopeOf('deployment', e.deploymentId) : 'sentinelId' in e ? scopeOf('sentinel', e.sentinelId) : 'environmentId' in e ? scopeOf('environment', e.environmentId) : null;
    const s = named ? await named : false;
    return !!s && inScope(p, s);
  };
}

/** Who holds a socket: a hash of the credential, so the map holds no secret. */
const holderOf = (req: FastifyRequest) => createHash('sha256').update(bearerToken(req) ?? subprotocolToken(req) ?? '').digest('base64url');

/** Pings every socket each interval and drops those whose last ping went unanswered. */
function heartbeat(intervalMs: number) {
  const alive = new Map<WebSocket, boolean>();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    for (const [socket, answered] of alive) {
      if (!answered) {
        socket.terminate();
        alive.delete(socket);
        continue;
      }
      alive.set(socket, false);
      socket.ping();
    }
  };
  return {
    add(socket: WebSocket) {
      alive.set(socket, true);
      socket.on('pong', () => alive.has(socket) && alive.set(socket, true));
      socket.on('close', () => alive.delete(socket));
      timer ??= setInterval(tick, intervalMs).unref();
    },
    stop: () => clearInterval(timer),
  };
}

export function eventRoutes(deps: { hub: EventHub; keys?: KeyAuth; workflows: { commands: { sql: Sql } }; events?: EventSocketOptions }) {
  const allowed = eventFilter(deps.workflows.commands.sql, new LRUCache({ max: SCOPE_CACHE_MAX }));
  const quota = new SocketQuota({ perHolder: deps.events?.socketsPerToken ?? EVENT_SOCKETS_PER_TOKEN, perWorkspace: deps.events?.socketsPerWorkspace ?? EVENT_SOCKETS_PER_WORKSPACE });
  const workspaceOf = (req: FastifyRequest) => {
    const p = principalOf(req);
    return p.type === 'key' ? p.scope.workspaceId : null;
  };
  const pings = heartbeat(deps.events?.pingIntervalMs ?? EVENT_PING_INTERVAL_MS);
  return (app: FastifyInstance) => {
    app.addHook('onClose', async () => pings.stop());
    app.get(
      EVENTS_PATH,
      {
        websocket: true,
        config: { permission: 'deployments.read' },
        // Validated before the upgrade, so a bad query or a full quota is a plain HTTP answer.
        preValidation: async (req) => {
          parse(EventsQuery, req.query, 'query');
          const refused = quota.refusal(holderOf(req), workspaceOf(req));
          if (refused) throw new AppError('ERR_EVENTS_TOO_MANY_SOCKETS', refused);
        },
      },
      (socket: WebSocket, req) => {
        const holder = holderOf(req);
        // Two upgrades of one holder may both have passed preValidation.
        if (quota.refusal(holder, workspaceOf(req))) {
          socket.close(1013, 'too many event sockets for this credential or workspace');
          return;
        }
        const unhold = quota.add(holder, workspaceOf(req));
        const q = parse(EventsQuery, req.query, 'query');
        const p = principalOf(req);
        // A reader that stays behind is cut, not one a burst left behind for a moment (slow-client.ts).
        const backlog: Backlog = { overSince: undefined };
        const send = (e: LiveEvent) => {
          if (tooSlow(backlog, socket.bufferedAmount, Date.now())) {
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
        const revoke =
          p.type === 'key' && deps.keys ? deps.keys.hold(p.id, (why) => (socket.close(CLOSE_REVOKED, `credential ${why}`), setTimeout(() => socket.terminate(), 1_000).unref()), p.expiresAt) : () => {};
        let released = false;
        const release = () => {
          unsubscribe();
          if (released) return;
          released = true;
          revoke();
          unhold();
        };
        socket.on('close', release);
        socket.on('error', release);
        pings.add(socket);
        socket.send(JSON.stringify({ type: 'hello' }));
      },
    );
  };
}
