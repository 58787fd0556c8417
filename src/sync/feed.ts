// createFeed: ctrl's side of the change feed as one unit to wire: the tailer, the cluster
// feed routes, and the outbox cleanup timer. Start it before the server listens and close it
// before the server closes (close ends every open stream with an `end` line, so agents resume
// from their cursor on another replica).
import { setMaxListeners } from 'node:events';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../log';
import type { Sql } from '../store/db';
import { deleteExpired } from '../store/changes';
import { clusterFeedRoutes } from '../http/cluster-feed';
import { Semaphore } from './stream';
import { Tailer, DEFAULT_POLL_MS } from './tailer';
import type { ReadinessCheck } from '../health';
import client from 'prom-client';
import type { Registry } from 'prom-client';

export interface FeedOptions {
  sql: Sql;
  logger: Logger;
  /** Configured REGION → TOKEN pairs (--agent-tokens); created tokens are looked up in the database. */
  agentTokens?: Record<string, string>;
  waitLimitMs?: number;
  heartbeatMs?: number;
  pollMs?: number;
  bufferSize?: number;
  cleanupTtlMs?: number;
  cleanupIntervalMs?: number;
  maxConcurrentSnapshots?: number;
}

export interface Feed {
  /** Registers GET /v1/cluster/changes and the desired-state lookups (pass to buildCtrlApp's routes). */
  routes(app: FastifyInstance): void;
  start(): Promise<void>;
  close(): Promise<void>;
  /** Runs one cleanup pass now; returns rows deleted. */
  cleanup(): Promise<number>;
  readonly tailer: Tailer;
  /** Ready while the tailer is reading the outbox; a stuck tailer starves every agent. */
  readinessCheck(): ReadinessCheck;
  /** Registers the feed's Prometheus metrics. */
  registerMetrics(registry: Registry): void;
}

/** Below the 60 s idle timeout common to load balancers, so the `end` line gets through them. */
export const DEFAULT_WAIT_LIMIT_MS = 55_000;
/** Idle lines keep proxies from closing the connection and let agents notice a dead one. */
export const DEFAULT_HEARTBEAT_MS = 10_000;
/** A day of changes: agents down longer than that do one full sync, which is cheap. */
export const DEFAULT_CLEANUP_TTL_MS = 24 * 60 * 60_000;
export const DEFAULT_CLEANUP_INTERVAL_MS = 10 * 60_000;
/** Each snapshot holds a pooled connection while it streams; keep most of the pool free. */
export const DEFAULT_MAX_CONCURRENT_SNAPSHOTS = 4;
/** A tailer silent this long (at least) is stuck: 5 s is 50 default polls. */
const STALE_FLOOR_MS = 5_000;
/** How long close() waits for open streams to write `end` before it stops waiting. */
const CLOSE_GRACE_MS = 5_000;

export function createFeed(opts: FeedOptions): Feed {
  const logger = opts.logger;
  const tailer = new Tailer({ sql: opts.sql, logger, pollMs: opts.pollMs, bufferSize: opts.bufferSize });
  const closing = new AbortController();
  // Every open stream listens on this signal: thousands of listeners are expected, not a leak.
  setMaxListeners(0, closing.signal);
  const streams = new Set<Promise<void>>();
  const ttl = opts.cleanupTtlMs ?? DEFAULT_CLEANUP_TTL_MS;
  let timer: NodeJS.Timeout | undefined;
  let cleaning: Promise<number> | undefined;

  const cleanup = () => {
    cleaning ??= deleteExpired(opts.sql, ttl)
      .then((n) => {
        if (n) logger.info({ deleted: n }, 'feed cleanup done');
        return n;
      })
      .finally(() => {
        cleaning = undefined;
      });
    return cleaning;
  };

  const routes = clusterFeedRoutes({
    sql: opts.sql,
    logger,
    agentTokens: opts.agentTokens ?? {},
    waitLimitMs: opts.waitLimitMs ?? DEFAULT_WAIT_LIMIT_MS,
    stream: {
      tailer,
      logger,
      heartbeatMs: opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
      retentionTtlMs: ttl,
      snapshotSlots: new Semaphore(opts.maxConcurrentSnapshots ?? DEFAULT_MAX_CONCURRENT_SNAPSHOTS),
      closing: closing.signal,
    },
    track(p) {
      streams.add(p);
      void p.finally(() => streams.delete(p));
    },
  });

  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  return {
    tailer,
    routes,
    cleanup,
    readinessCheck: () => ({
      name: 'feed',
      check: async () => {
        if (!tailer.lastTailAt) return 'the change feed has not read the outbox yet';
        // The tailer reads at least every poll interval; failing queries back off 10×.
        const staleMs = Math.max(STALE_FLOOR_MS, pollMs * 20);
        const age = Date.now() - tailer.lastTailAt;
        return age > staleMs ? `the change feed last read the outbox ${Math.round(age / 1000)} s ago` : null;
      },
    }),
    registerMetrics(registry) {
      new client.Gauge({
        name: 'feed_open_streams',
        help: 'Change feed long polls currently open on this ctrl',
        registers: [registry],
        collect() {
          this.set(streams.size);
        },
      });
      new client.Gauge({
        name: 'feed_buffered_changes',
        help: 'Settled outbox rows held in memory for streams',
        registers: [registry],
        collect() {
          this.set(tailer.buffer.size);
        },
      });
      new client.Counter({
        name: 'feed_tail_queries_total',
        help: 'Outbox tail queries (one per poll, whatever the number of agents)',
        registers: [registry],
        collect() {
          this.reset();
          this.inc(tailer.polls);
        },
      });
    },
    async start() {
      await tailer.start();
      timer = setInterval(() => {
        cleanup().catch((err) => logger.error({ err }, 'feed cleanup failed'));
      }, opts.cleanupIntervalMs ?? DEFAULT_CLEANUP_INTERVAL_MS);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      closing.abort();
      let t: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...streams]),
        new Promise((r) => {
          t = setTimeout(r, CLOSE_GRACE_MS);
        }),
      ]);
      clearTimeout(t);
      await tailer.close();
      await cleaning?.catch(() => {});
    },
  };
}
