// The cluster API's read side: GET /v1/cluster/changes (the NDJSON long-poll feed) and the
// single-resource desired-state lookups. Every route takes an agent token, checked before
// anything else is read (onRequest), and serves only the token's region: another region asked
// for by name is 403; a sentinel of another region is 404, like a missing one, so the answer
// does not reveal that it exists. Bad input and refusals (cursor, stream limit, busy snapshot
// slots) come from feed.open() before the response starts, so they are always a JSON error;
// once the stream has started, a failure cuts the response, which the agent detects (no
// `end`) and answers by reconnecting with the cursor it holds. The stream policy lives in
// src/sync (feed.ts); this file only carries it over HTTP.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { issuesToDetails, notFound, unauthorized, validationError } from '../errors';
import { getSentinelDesired, getTopologyDesired } from '../store/desired-state';
import type { Sql } from '../store/db';
import { sentinelState, topologyState } from '../sync/desired';
import { StreamAborted, type Feed, type LineSink } from '../sync';
import { safeString, type DesiredResponse, type StreamLine } from '../sync/wire';
import { assertAgentRegion, type AgentAuth } from './auth';

export interface ClusterFeedDeps {
  sql: Sql;
  feed: Feed;
  /** The process's one AgentAuth: its revocations cut the token's open streams here. */
  auth: AgentAuth;
}

const region = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'invalid region name');

export const ChangesQuery = z.object({
  cursor: safeString().min(1, 'must not be empty').max(200).optional(),
  wait: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a number of seconds')
    .transform(Number)
    .refine((n) => n > 0, 'must be positive')
    .optional(),
  region: region.optional(),
  /** `1`: the agent takes a `handover` line at the wait limit (src/sync/wire's StreamLine). */
  handover: z.literal('1', { error: 'must be 1' }).optional(),
});

const RegionQuery = z.object({ region: region.optional() });
// safeString: a NUL in an id reached the query and answered 500 (found by tests/http/fuzz.test.ts).
const IdParams = z.object({ id: safeString().min(1).max(128) });

function parse<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const r = schema.safeParse(value ?? {});
  if (!r.success) throw validationError(`invalid ${what}`, issuesToDetails(r.error.issues, `${what}.`));
  return r.data;
}

/**
 * Lines are sent in chunks of about this many bytes: a page of a large snapshot is never joined
 * into one string, and small lines still go out in few writes.
 */
const CHUNK_BYTES = 64 * 1024;

function sinkFor(res: ServerResponse): LineSink {
  const drained = (): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  const closed = () => res.destroyed || res.writableEnded;
  /** Writes chunk by chunk, waiting for the socket to drain whenever it is full. */
  async function writeAll(lines: Iterable<string>): Promise<void> {
    let chunk = '';
    for (const l of lines) {
      chunk += l + '\n';
      if (chunk.length < CHUNK_BYTES) continue;
      if (closed()) return;
      const ok = res.write(chunk);
      chunk = '';
      if (!ok) await drained();
    }
    if (chunk && !closed() && !res.write(chunk)) await drained();
  }
  function* serialize(lines: StreamLine[]) {
    for (const l of lines) yield JSON.stringify(l);
  }
  return {
    get closed() {
      return closed();
    },
    write: (lines) => writeAll(serialize(lines)),
    writeSerialized: (lines) => writeAll(lines),
    push: (chunk) => !closed() && res.write(chunk),
    drained: () => (closed() || !res.writableNeedDrain ? Promise.resolve() : drained()),
  };
}

/**
 * Watches the client of one poll. It may go away while a full sync waits for a snapshot slot,
 * or mid-stream. HTTP server sockets allow half-open connections, so a client that hangs up
 * shows as 'end' on the socket, not 'close': stop and drop the socket then too.
 */
function watchClient(raw: IncomingMessage) {
  const socket = raw.socket;
  const gone = new AbortController();
  const abort = () => {
    if (!gone.signal.aborted) gone.abort(new StreamAborted('client went away'));
  };
  // The request first, then its socket: a socket that closes under a request whose response
  // has not finished destroys the request with an ECONNRESET error, whose stack Node's destroy
  // reads (mapped frame by frame with source maps on: the image runs with
  // --enable-source-maps): 3.3% of ctrl's CPU in bench:feed at 1,000 agents, once per poll an
  // agent closes. A request already destroyed is skipped there.
  const hangUp = () => {
    if (!raw.destroyed) raw.destroy();
    if (!socket.destroyed) socket.destroy();
  };
  const onGone = () => {
    abort();
    hangUp();
  };
  socket.once('end', onGone);
  socket.once('close', onGone);
  return {
    signal: gone.signal,
    abort,
    hangUp,
    unwatch: () => {
      socket.off('end', onGone);
      socket.off('close', onGone);
    },
  };
}

// Over 80 lines: the route group of the feed's read side; each route handler inside is short.
export function clusterFeedRoutes(deps: ClusterFeedDeps) {
  const { feed } = deps;
  return (app: FastifyInstance): void => {
    app.addHook('onRequest', deps.auth.onRequest);
    // A revoked token's streams end at once, on every replica (each hears the NOTIFY).
    const unsubscribe = deps.auth.onRevoked((tokenId) => feed.cut(tokenId));
    app.addHook('onClose', async () => unsubscribe());

    app.get('/v1/cluster/changes', async (req, reply) => {
      const q = parse(ChangesQuery, req.query, 'query');
      const r = q.region ?? req.agentRegion!;
      assertAgentRegion(req, r);
      const client = watchClient(req.raw);
      const { hangUp } = client;
      try {
        let stream;
        try {
          stream = await feed.open({
            region: r,
            holder: req.agentTokenId!,
            cursor: q.cursor,
            waitMs: q.wait !== undefined ? q.wait * 1000 : undefined,
            handover: q.handover === '1',
            signal: client.signal,
          });
        } catch (err) {
          // An agent that hangs up while its full sync waits for a slot is not a failure of ours.
          if (!client.signal.aborted) throw err;
          req.log.debug({ region: r }, 'agent went away while waiting for a snapshot slot');
          return reply.hijack();
        }
        // Revoked after this request was authenticated but before its stream was admitted:
        // the revocation's cut found nothing to cut, so it is refused here.
        if (deps.auth.isRevoked(req.agentTokenId!)) {
          stream.abandon();
          throw unauthorized('invalid agent token');
        }
        reply.hijack();
        const res = reply.raw;
        try {
          res.writeHead(200, {
            'content-type': 'application/x-ndjson',
            'cache-control': 'no-store',
            // Proxies must pass lines through as they come, not buffer the long poll.
            'x-accel-buffering': 'no',
            // One poll per connection: the socket closes with the response, so no half-dead
            // keep-alive socket of a vanished agent outlives its poll or holds up shutdown.
            connection: 'close',
          });
          res.flushHeaders();
        } catch (err) {
          // run() is what releases the stream's slots; a stream that never runs must hand
          // them back itself.
          stream.abandon();
          throw err;
        }
        res.on('close', client.abort);
        await stream.run(sinkFor(res)).then(
          () => {
            res.end();
          },
          (err: unknown) => {
            // Whatever broke once the agent had hung up (a write, a page read) is its leaving.
            if (err instanceof StreamAborted || client.signal.aborted) req.log.debug({ region: r, why: (err as Error).message }, 'feed stream cut');
            else req.log.warn({ err, region: r }, 'feed stream failed');
            // The socket, not the response: a response already closed no longer owns it.
            hangUp();
          },
        );
      } finally {
        client.unwatch();
      }
    });

    app.get('/v1/cluster/deployments/:id/desired', async (req): Promise<DesiredResponse> => {
      const { id } = parse(IdParams, req.params, 'params');
      const r = parse(RegionQuery, req.query, 'query').region ?? req.agentRegion!;
      assertAgentRegion(req, r);
      const row = await getTopologyDesired(deps.sql, id, r);
      const state = row ? topologyState(row) : undefined;
      if (!state || state.action === 'delete') throw notFound('deployment', `${id} in region ${r}`);
      return { resource: { type: 'deployment_topology', id, region: r }, state };
    });

    app.get('/v1/cluster/sentinels/:id/desired', async (req): Promise<DesiredResponse> => {
      const { id } = parse(IdParams, req.params, 'params');
      const region = req.agentRegion!;
      // Looked up within the token's region: another region's sentinel is as absent as a
      // missing one, so the answer reveals neither its existence nor where it lives.
      const row = await getSentinelDesired(deps.sql, id, region);
      const state = row ? sentinelState(row) : undefined;
      if (!state || state.action === 'delete') throw notFound('sentinel', id);
      return { resource: { type: 'sentinel', id, region }, state };
    });
  };
}
