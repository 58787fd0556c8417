// The cluster API's read side: GET /v1/cluster/changes (the NDJSON long-poll feed) and the
// single-resource desired-state lookups. Every route takes an agent token and serves only the
// token's region (403 otherwise). Bad input is rejected before the response starts, so it is
// always a 4xx JSON error; once the stream has started, a failure cuts the response, which the
// agent detects (no `end`) and answers by reconnecting with the cursor it holds.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { AppError, issuesToDetails, notFound, validationError } from '../errors';
import type { Logger } from '../log';
import * as changes from '../store/changes';
import { getSentinelDesired, getTopologyDesired } from '../store/feed';
import type { Sql } from '../store/db';
import { comparePositions, parseCursor } from '../sync/cursor';
import { sentinelState, topologyState } from '../sync/desired';
import { runStream, StreamAborted, type LineSink, type StreamDeps } from '../sync/stream';
import type { DesiredResponse, StreamLine } from '../sync/wire';
import { agentAuth, assertAgentRegion } from './auth';

export interface ClusterFeedDeps {
  sql: Sql;
  logger: Logger;
  agentTokens: Record<string, string>;
  /** Upper bound of `wait`; also the default when the agent sends none. */
  waitLimitMs: number;
  stream: StreamDeps;
  /** Called with each running stream, so shutdown can wait for their `end` lines. */
  track(p: Promise<void>): void;
}

const region = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'invalid region name');

const ChangesQuery = z.object({
  cursor: z.string().min(1, 'must not be empty').max(200).optional(),
  wait: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a number of seconds')
    .transform(Number)
    .refine((n) => n > 0, 'must be positive')
    .optional(),
  region: region.optional(),
});

const RegionQuery = z.object({ region: region.optional() });
const IdParams = z.object({ id: z.string().min(1).max(128) });

function parse<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const r = schema.safeParse(value ?? {});
  if (!r.success) throw validationError(`invalid ${what}`, issuesToDetails(r.error.issues, `${what}.`));
  return r.data;
}

const gone = (message: string) => new AppError('ERR_FEED_CURSOR_EXPIRED', message);

function sinkFor(res: ServerResponse): LineSink {
  const writeText = (body: string): Promise<void> => {
    if (res.destroyed || res.writableEnded || !body) return Promise.resolve();
    if (res.write(body)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };
  return {
    get closed() {
      return res.destroyed || res.writableEnded;
    },
    write(lines: StreamLine[]) {
      let body = '';
      for (const l of lines) body += JSON.stringify(l) + '\n';
      return writeText(body);
    },
    writeSerialized(lines: string[]) {
      let body = '';
      for (const l of lines) body += l + '\n';
      return writeText(body);
    },
  };
}

export function clusterFeedRoutes(deps: ClusterFeedDeps) {
  const { tailer } = deps.stream;
  return (app: FastifyInstance): void => {
    app.addHook('preHandler', agentAuth(deps.sql, deps.agentTokens));

    app.get('/v1/cluster/changes', async (req, reply) => {
      const q = parse(ChangesQuery, req.query, 'query');
      const r = q.region ?? req.agentRegion!;
      assertAgentRegion(req, r);
      if (!tailer.epoch || tailer.isClosed) throw new AppError('ERR_FEED_UNAVAILABLE', 'change feed is not running');
      let from: { epoch: string; position: changes.Position } | undefined;
      if (q.cursor !== undefined) {
        const c = parseCursor(q.cursor);
        if (c.epoch !== tailer.epoch) throw gone('cursor belongs to another feed epoch (database restored?): start over with a full sync');
        // Cursors inside the buffer are valid whatever cleanup did: the buffer still holds the
        // rows after them. Only older ones need the table's retention floor.
        if (comparePositions(c, tailer.buffer.floor) < 0) {
          const floor = await changes.retentionFloor(deps.sql, deps.stream.retentionTtlMs);
          if (floor.expired && floor.oldest && comparePositions(c, floor.oldest) < 0) {
            throw gone('cursor is older than the change retention: start over with a full sync');
          }
        }
        from = { epoch: c.epoch, position: c };
      }
      const waitMs = Math.min(q.wait !== undefined ? q.wait * 1000 : deps.waitLimitMs, deps.waitLimitMs);

      reply.hijack();
      const res = reply.raw;
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
      const gone$ = new AbortController();
      res.on('close', () => gone$.abort());
      // HTTP server sockets allow half-open connections, so a client that hangs up mid-poll
      // shows as 'end' on the socket, not 'close' on the response: stop and drop the socket.
      const socket = req.raw.socket;
      const onEnd = () => {
        gone$.abort();
        socket.destroy();
      };
      socket.once('end', onEnd);
      const run = runStream(deps.stream, { region: r, from, waitMs, signal: gone$.signal }, sinkFor(res)).then(
        () => {
          res.end();
        },
        (err: unknown) => {
          if (!(err instanceof StreamAborted)) req.log.warn({ err, region: r }, 'feed stream failed');
          // The socket, not the response: a response already closed no longer owns it.
          socket.destroy();
        },
      );
      deps.track(run);
      await run;
      socket.off('end', onEnd);
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
      const row = await getSentinelDesired(deps.sql, id);
      if (!row) throw notFound('sentinel', id);
      assertAgentRegion(req, row.region);
      const state = sentinelState(row);
      if (state.action === 'delete') throw notFound('sentinel', id);
      return { resource: { type: 'sentinel', id, region: row.region }, state };
    });
  };
}
