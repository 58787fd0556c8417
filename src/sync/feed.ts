// createFeed: ctrl's side of the change feed as one unit to wire: the tailer, the stream
// policy (cursor checks, per-token stream limit, fair snapshot slots), settle-lag watching and
// the outbox cleanup timer. It knows no HTTP: src/http/cluster-feed.ts authenticates, parses
// the query, calls open() and runs the stream into the response. Start it before the server
// listens and close it before the server closes (close ends every open stream with an `end`
// line, so agents resume from their cursor on another replica).
import { AppError } from '../errors';
import type { ReadinessCheck } from '../health';
import type { Logger } from '../log';
import type { Sql } from '../store/db';
import { deleteExpired, retentionFloor, snapshotXmax, type Position } from '../store/changes';
import { comparePositions, parseCursor } from './cursor';
import { registerFeedMetrics, type FeedGauges } from './feed-metrics';
import { SettleWatch, DEFAULT_SETTLE_LAG_MAX_MS } from './settle';
import { Closing } from './closing';
import { FairSlots } from './slots';
import { runStream, type LineSink, type StreamDeps } from './stream';
import { Tailer, DEFAULT_POLL_MS } from './tailer';
import { DEFAULT_READ_LAG_MAX_MS, newSnapshotReadStats, type SnapshotReadStats } from './snapshot-source';
import type { Registry } from 'prom-client';

export interface FeedOptions {
  sql: Sql;
  logger: Logger;
  waitLimitMs?: number;
  heartbeatMs?: number;
  pollMs?: number;
  bufferSize?: number;
  bufferBytes?: number;
  cleanupTtlMs?: number;
  cleanupIntervalMs?: number;
  maxConcurrentSnapshots?: number;
  snapshotQueuePerRegion?: number;
  snapshotWriteStallMs?: number;
  /** Longest a whole full sync may stream (DEFAULT_SNAPSHOT_DEADLINE_MS). */
  snapshotDeadlineMs?: number;
  maxStreamsPerToken?: number;
  settleLagMaxMs?: number;
  /** A hot standby's pool that full syncs read when it has caught up (--database-read-url). */
  readSql?: Sql;
  /** Longest a full sync waits for the standby before reading the primary (DEFAULT_READ_LAG_MAX_MS). */
  readLagMaxMs?: number;
  /** false: `handover=1` is ignored, as by a ctrl before it (benchmarks compare the two). */
  handover?: boolean;
  /** How long a stream goes on after its `handover` line (DEFAULT_HANDOVER_GRACE_MS). */
  handoverGraceMs?: number;
}

export interface OpenRequest {
  region: string;
  /** Who holds the stream (the agent token's id): the per-holder limit and cut() key on it. */
  holder: string;
  /** The wire cursor; absent for a full sync. */
  cursor?: string;
  /** Requested wait; capped at the feed's limit, which is also the default. */
  waitMs?: number;
  /** The agent takes a `handover` line at the wait limit (it asked with handover=1). */
  handover?: boolean;
  /** Aborted when the client goes away (also while waiting for a snapshot slot). */
  signal: AbortSignal;
}

/** An admitted stream: run it once, or abandon it if the response cannot start. */
export interface OpenStream {
  run(out: LineSink): Promise<void>;
  abandon(): void;
}

export interface Feed {
  readonly tailer: Tailer;
  /** Where full syncs were read (standby or primary), counted since start. */
  readonly snapshotReads: SnapshotReadStats;
  /**
   * Checks everything that must fail before the response starts (cursor epoch, future and
   * retention: 400/410; the holder's stream limit: 429; a full snapshot queue: 503) and admits
   * the stream.
   */
  open(req: OpenRequest): Promise<OpenStream>;
  /** Cuts every open stream of a holder without an `end` line (its token was revoked). */
  cut(holder: string): number;
  start(): Promise<void>;
  close(): Promise<void>;
  /** Runs one cleanup pass now; returns rows deleted. */
  cleanup(): Promise<number>;
  /** Ready while the tailer is reading the outbox and changes settle. */
  readinessCheck(): ReadinessCheck;
  registerMetrics(registry: Registry): void;
}

/** Below the 60 s idle timeout common to load balancers, so the `end` line gets through them. */
export const DEFAULT_WAIT_LIMIT_MS = 55_000;
/**
 * Each stream ends up to this fraction of its wait early, at random (the Kubernetes API server
 * spreads its watch timeouts over [t, 2t] alike). Agents that connected
 * together (every agent after a ctrl restart) would otherwise reconnect together every wait,
 * for ever: in the 10,000-agent benchmark each round overflowed the listen queue, and an agent
 * whose SYN was dropped waited 1 to 7 s of retransmits for its next poll (changes to it with
 * it). A fifth of the wait still left the 10-second polls of the benchmark bunched after two
 * rounds; half spreads them within one. Polls end sooner on average (by a quarter), which at
 * the default 55 s wait costs nothing worth counting.
 */
export const WAIT_JITTER = 0.5;
/**
 * How long a stream goes on after its `handover` line. The agent closes it itself as soon as its
 * next poll is answered (milliseconds, usually), so this only matters for a next poll that is
 * slow: a reconnect through SYN retransmits (1 s, then 3 s more) on an overflowing listen
 * queue is answered within it, and an agent turned away for a moment (503/429 with a
 * Retry-After of a few seconds) keeps receiving changes meanwhile. Past it the stream ends
 * with `end`, as one without a handover does at its wait limit.
 */
export const DEFAULT_HANDOVER_GRACE_MS = 10_000;
/** Idle lines keep proxies from closing the connection and let agents notice a dead one. */
export const DEFAULT_HEARTBEAT_MS = 10_000;
/** A day of changes: agents down longer than that do one full sync, which is cheap. */
export const DEFAULT_CLEANUP_TTL_MS = 24 * 60 * 60_000;
export const DEFAULT_CLEANUP_INTERVAL_MS = 10 * 60_000;
/** Each snapshot holds a pooled connection while it streams; keep most of the pool free. */
export const DEFAULT_MAX_CONCURRENT_SNAPSHOTS = 4;
/** Full syncs of one region waiting for a slot; past it 503 (agents retry with backoff). */
export const DEFAULT_SNAPSHOT_QUEUE_PER_REGION = 16;
/** A client that takes no bytes for 30 s is gone or broken; a slow but live link takes some. */
export const DEFAULT_WRITE_STALL_MS = 30_000;
/**
 * A whole full sync must finish within this. A large region (7.5 MB measured) streams in a few
 * seconds on a datacenter link and in about a minute at 1 Mbit/s; 2 minutes lets a slow link
 * through twice over, while a slot held longer keeps other regions' full syncs waiting.
 */
export const DEFAULT_SNAPSHOT_DEADLINE_MS = 120_000;
/** An agent holds one stream; a few more cover a reconnect overlapping the old poll. */
export const DEFAULT_MAX_STREAMS_PER_TOKEN = 4;
/** A tailer silent this long (at least) is stuck: 5 s is 50 default polls. */
const STALE_FLOOR_MS = 5_000;
/** How long close() waits for open streams to write `end` before it stops waiting. */
const CLOSE_GRACE_MS = 5_000;

const gone = (message: string) => new AppError('ERR_FEED_CURSOR_EXPIRED', message);

// A factory over 80 lines: its closures share the tailer, slots and stream set; each inner
// function is short and the factory only wires them.
export function createFeed(opts: FeedOptions): Feed {
  const { logger, sql } = opts;
  const tailer = new Tailer({ sql, logger, pollMs: opts.pollMs, bufferSize: opts.bufferSize, bufferBytes: opts.bufferBytes });
  const settle = new SettleWatch({ tailer, sql, logger, maxLagMs: opts.settleLagMaxMs ?? DEFAULT_SETTLE_LAG_MAX_MS });
  const closing = new Closing();
  const streams = new Set<Promise<void>>();
  const holders = new Map<string, Set<AbortController>>();
  const ttl = opts.cleanupTtlMs ?? DEFAULT_CLEANUP_TTL_MS;
  const waitLimitMs = opts.waitLimitMs ?? DEFAULT_WAIT_LIMIT_MS;
  const maxPerHolder = opts.maxStreamsPerToken ?? DEFAULT_MAX_STREAMS_PER_TOKEN;
  const stallMs = opts.snapshotWriteStallMs ?? DEFAULT_WRITE_STALL_MS;
  const handoverGraceMs = opts.handover === false ? undefined : (opts.handoverGraceMs ?? DEFAULT_HANDOVER_GRACE_MS);
  const slots = new FairSlots(
    opts.maxConcurrentSnapshots ?? DEFAULT_MAX_CONCURRENT_SNAPSHOTS,
    opts.snapshotQueuePerRegion ?? DEFAULT_SNAPSHOT_QUEUE_PER_REGION,
    // A queued full sync waits at most one wait limit: the agent retries after a 503.
    waitLimitMs,
  );
  const deps: StreamDeps = {
    tailer,
    logger,
    heartbeatMs: opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    retentionTtlMs: ttl,
    writeStallMs: stallMs,
    snapshotDeadlineMs: opts.snapshotDeadlineMs ?? DEFAULT_SNAPSHOT_DEADLINE_MS,
    closing,
    snapshots: { primary: sql, standby: opts.readSql, maxLagMs: opts.readLagMaxMs ?? DEFAULT_READ_LAG_MAX_MS, logger, stats: newSnapshotReadStats() },
  };
  let timer: NodeJS.Timeout | undefined;
  let cleaning: Promise<number> | undefined;
  // The highest xmax seen, per epoch: a new epoch (restore, failover) is a new history whose
  // transaction ids may be lower.
  let seenXmax = { epoch: '', xmax: { txid: '0', id: '0' } as Position };

  const cleanup = () => {
    cleaning ??= deleteExpired(sql, ttl)
      .then((n) => {
        if (n) logger.info({ deleted: n }, 'feed cleanup done');
        return n;
      })
      .finally(() => {
        cleaning = undefined;
      });
    return cleaning;
  };

  /** A resumable position for a wire cursor, or a 400/410 that makes the agent start over. */
  async function resume(raw: string): Promise<{ epoch: string; position: Position }> {
    const c = parseCursor(raw);
    if (c.epoch !== tailer.epoch) throw gone('cursor belongs to another feed epoch (database restored or failed over?): start over with a full sync');
    // Past the buffer's head only (every position the tailer handed out is settled, so older),
    // and past the highest xmax seen so far in this epoch: xmax only grows within one history
    // (a failover or restore renews the epoch), so each agent costs one query, not one per
    // poll, when its cursor is an empty feed's (xmin, 0) boundary ahead of the buffer's head.
    if (seenXmax.epoch !== c.epoch) seenXmax = { epoch: c.epoch, xmax: { txid: '0', id: '0' } };
    if (comparePositions(c, tailer.buffer.head) > 0 && comparePositions(c, seenXmax.xmax) > 0) {
      seenXmax = { epoch: c.epoch, xmax: { txid: await snapshotXmax(sql), id: '0' } };
      if (comparePositions(c, seenXmax.xmax) > 0) {
        throw gone('cursor is ahead of this database (restored from an older backup?): start over with a full sync');
      }
    }
    // Cursors inside the buffer are valid whatever cleanup did: the buffer still holds the
    // rows after them. Only older ones need the table's retention floor (checked again, in the
    // read's own snapshot, while the stream catches up).
    if (comparePositions(c, tailer.buffer.floor) < 0) {
      const floor = await retentionFloor(sql, ttl);
      if (floor.expired && floor.oldest && comparePositions(c, floor.oldest) < 0) {
        throw gone('cursor is older than the change retention: start over with a full sync');
      }
    }
    return { epoch: c.epoch, position: c };
  }

  function admit(holder: string): { cut: AbortController; release: () => void } {
    const held = holders.get(holder) ?? new Set();
    if (held.size >= maxPerHolder) {
      throw new AppError('ERR_FEED_TOO_MANY_STREAMS', `this agent token already holds ${held.size} open streams (limit ${maxPerHolder})`);
    }
    holders.set(holder, held);
    const cut = new AbortController();
    held.add(cut);
    const release = () => {
      held.delete(cut);
      if (held.size === 0 && holders.get(holder) === held) holders.delete(holder);
    };
    return { cut, release };
  }

  async function open(req: OpenRequest): Promise<OpenStream> {
    if (!tailer.epoch || tailer.isClosed) throw new AppError('ERR_FEED_UNAVAILABLE', 'change feed is not running');
    const from = req.cursor !== undefined ? await resume(req.cursor) : undefined;
    const admitted = admit(req.holder);
    let releaseSlot: (() => void) | undefined;
    try {
      if (!from) releaseSlot = await slots.acquire(req.region, req.signal);
    } catch (err) {
      admitted.release();
      throw err;
    }
    const done = () => {
      releaseSlot?.();
      admitted.release();
    };
    return {
      abandon: done,
      run(out) {
        // One controller fed by both sources (AbortSignal.any is costly at a thousand polls a
        // second on Node 20: it tracks its sources through weak references).
        // The source's reason is passed on: without one, abort() makes a DOMException (with a
        // stack) per poll an agent closes.
        const both = new AbortController();
        const abort = (ev: Event) => both.abort((ev.target as AbortSignal).reason);
        if (req.signal.aborted) both.abort(req.signal.reason);
        else if (admitted.cut.signal.aborted) both.abort(admitted.cut.signal.reason);
        req.signal.addEventListener('abort', abort, { once: true });
        admitted.cut.signal.addEventListener('abort', abort, { once: true });
        const unhook = () => {
          req.signal.removeEventListener('abort', abort);
          admitted.cut.signal.removeEventListener('abort', abort);
        };
        const signal = both.signal;
        const waitMs = Math.min(req.waitMs ?? waitLimitMs, waitLimitMs) * (1 - WAIT_JITTER * Math.random());
        const grace = req.handover ? handoverGraceMs : undefined;
        const p = runStream(deps, { region: req.region, from, waitMs, handoverGraceMs: grace, signal, releaseSnapshotSlot: releaseSlot }, out).finally(() => {
          unhook();
          done();
        });
        streams.add(p);
        void p.catch(() => {}).finally(() => streams.delete(p));
        return p;
      },
    };
  }

  const gauges: FeedGauges = {
    openStreams: () => streams.size,
    bufferedChanges: () => tailer.buffer.size,
    bufferedBytes: () => tailer.buffer.bytes,
    tailQueries: () => tailer.polls,
    settleLagSeconds: () => settle.lagMs / 1000,
    settleBlocked: () => (settle.blocked ? 1 : 0),
    snapshotsQueued: () => slots.queued,
    snapshotReads: () => deps.snapshots.stats,
  };
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  return {
    tailer,
    snapshotReads: deps.snapshots.stats,
    open,
    cleanup,
    cut(holder) {
      const held = [...(holders.get(holder) ?? [])];
      for (const c of held) c.abort();
      return held.length;
    },
    readinessCheck: () => ({
      name: 'feed',
      check: async () => {
        if (!tailer.lastTailAt) return 'the change feed has not read the outbox yet';
        // The tailer reads at least every poll interval; failing queries back off 10×.
        const staleMs = Math.max(STALE_FLOOR_MS, pollMs * 20);
        const age = Date.now() - tailer.lastTailAt;
        if (age > staleMs) return `the change feed last read the outbox ${Math.round(age / 1000)} s ago`;
        return settle.reason();
      },
    }),
    registerMetrics: (registry) => registerFeedMetrics(registry, gauges),
    async start() {
      await tailer.start();
      settle.start();
      timer = setInterval(() => {
        cleanup().catch((err) => logger.error({ err }, 'feed cleanup failed'));
      }, opts.cleanupIntervalMs ?? DEFAULT_CLEANUP_INTERVAL_MS);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      settle.stop();
      closing.close();
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
