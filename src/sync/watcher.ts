// krane's change-feed watcher: keeps one long-poll stream to ctrl open at a time and feeds its
// events to the Dispatcher.
//
// Cursor rules. The watcher holds one committed cursor. In a full sync it commits nothing
// until `snapshot_end` arrived and every snapshot event was handled; only then does it call
// controller.gc with the resources the snapshot asked to apply, and commit the snapshot's
// cursor. Incremental events commit their cursor once they and every event before them were
// handled. A response that ends without `snapshot_end`/`end` (cut), a malformed or unknown
// line, or a handler that keeps failing ends the stream; the watcher reconnects after a
// jittered backoff from the cursor it holds. 410 (other epoch, or older than retention) and a
// rejected cursor mean a full sync now. A full resync runs every resyncIntervalMs as an audit.
//
// Handover: every poll asks for one (handover=1). At its wait limit ctrl then sends `handover`
// with a cursor instead of ending: the watcher commits it (once every event before it was
// handled), opens the next poll from it at once, and keeps reading the old poll meanwhile, so a
// change committed during the reconnect is applied without waiting for it; the old poll is
// closed as soon as the next one is answered. overlap.ts holds the rules that keep the cursor
// moving forward only. A ctrl before the handover ignores the parameter and ends its polls.
import { Dispatcher } from './dispatcher';
import { get, readText, retryAfterSeconds } from './watcher-http';
import { CutStreamError, DEFAULT_MAX_LINE_CHARS, LineReader, LineTooLongError } from './ndjson';
import { StreamLine, refKey, type ResourceRef } from './wire';
import { Overlap, type Drain } from './overlap';
import { CursorTracker } from './cursor-tracker';
import { DEFAULT_BACKOFF_MAX_MS, DEFAULT_BACKOFF_MIN_MS, DEFAULT_CONCURRENCY, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_BACKLOG, DEFAULT_RESYNC_INTERVAL_MS, type WatcherOptions } from './watcher-options';

export * from './watcher-options';

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** Ends a stream because a full sync was asked for (resync()); not a failure. */
class ResyncRequested extends Error {
  constructor() {
    super('full sync requested');
    this.name = 'ResyncRequested';
  }
}

export interface WatcherStats {
  /** Responses opened (each reconnect counts). */
  streams: number;
  /** Full syncs started and completed (GC ran). */
  snapshotsStarted: number;
  snapshotsCompleted: number;
  /** Responses that ended without their closing line, or failed mid-way. */
  failures: number;
  /** 410s and rejected cursors. */
  resets: number;
  /** Polls ctrl turned away for now with a Retry-After (full-sync slots busy, stream limit):
   *  back-pressure, not failures, so they are counted apart. */
  deferred: number;
  /** Change events handled (snapshot events included). */
  events: number;
  /** Polls that handed over to the next one instead of ending. */
  handovers: number;
  /** Changes applied from a poll after its handover: each would have waited for the reconnect. */
  drainedEvents: number;
}

type Outcome = 'ok' | 'reset' | { deferMs: number };

export class Watcher {
  private readonly o: Required<Omit<WatcherOptions, 'onPermanentFailure' | 'waitSeconds'>> & Pick<WatcherOptions, 'onPermanentFailure' | 'waitSeconds'>;
  private readonly dispatcher: Dispatcher;
  private readonly overlap: Overlap;
  private committed: string | undefined;
  private lastSnapshotAt = 0;
  private stopped = false;
  private running: Promise<void> | undefined;
  private current: AbortController | undefined;
  private wakeSleep: (() => void) | undefined;
  private resyncRequested = false;
  readonly stats: WatcherStats = { streams: 0, snapshotsStarted: 0, snapshotsCompleted: 0, failures: 0, resets: 0, deferred: 0, events: 0, handovers: 0, drainedEvents: 0 };

  constructor(opts: WatcherOptions) {
    this.o = {
      resyncIntervalMs: DEFAULT_RESYNC_INTERVAL_MS,
      concurrency: DEFAULT_CONCURRENCY,
      backoffMinMs: DEFAULT_BACKOFF_MIN_MS,
      backoffMaxMs: DEFAULT_BACKOFF_MAX_MS,
      idleTimeoutMs: DEFAULT_IDLE_TIMEOUT_MS,
      maxLineBytes: DEFAULT_MAX_LINE_CHARS,
      retries: 2,
      retryDelayMs: 200,
      handover: true,
      maxBacklog: DEFAULT_MAX_BACKLOG,
      ...opts,
      logger: opts.logger.child({ part: 'watcher' }),
    };
    // Below one, the reader would wait for room before the first event and never get it.
    if (!(Number.isInteger(this.o.maxBacklog) && this.o.maxBacklog >= 1)) throw new Error(`maxBacklog must be a positive whole number (got ${this.o.maxBacklog})`);
    this.dispatcher = new Dispatcher({
      controller: opts.controller,
      concurrency: this.o.concurrency,
      logger: this.o.logger,
      onPermanentFailure: opts.onPermanentFailure,
      retries: this.o.retries,
      retryDelayMs: this.o.retryDelayMs,
    });
    this.overlap = new Overlap(this.o.logger);
  }

  /** The committed cursor (undefined before the first complete full sync). */
  get cursor(): string | undefined {
    return this.committed;
  }

  /** Events read from the stream and not yet handled (at most maxBacklog). */
  get backlog(): number {
    return this.dispatcher.backlog;
  }

  start(): void {
    if (this.running) return;
    this.running = this.loop();
  }

  /**
   * Starts a full sync now instead of at the next resync (krane's GC brake after an operator's
   * confirmation: the approved deletions are re-checked against a fresh snapshot, never against
   * the one that was held). A stream in progress is ended, without backoff.
   */
  resync(): void {
    this.lastSnapshotAt = 0;
    this.resyncRequested = true;
    this.current?.abort(new ResyncRequested());
    this.wakeSleep?.();
  }

  /** Stops reading, lets handlers in flight finish, and resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.dispatcher.stop();
    this.current?.abort();
    this.overlap.end();
    this.wakeSleep?.();
    await this.running;
    await this.overlap.idle();
    await this.dispatcher.drain();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const full = !this.committed || Date.now() - this.lastSnapshotAt >= this.o.resyncIntervalMs;
      this.resyncRequested = false;
      try {
        const outcome = await this.overlap.run((handedOver) => this.session(full, handedOver));
        // The handed-over poll is still read; the next one opens now, without backoff.
        if (outcome === 'handover') continue;
        if (outcome === 'reset') {
          this.stats.resets++;
          this.committed = undefined;
        } else if (outcome !== 'ok') {
          this.stats.deferred++;
          await this.sleep(outcome.deferMs);
        }
        continue;
      } catch (err) {
        if (this.stopped) break;
        if (this.resyncRequested) {
          this.resyncRequested = false;
          continue;
        }
        this.stats.failures++;
        const protocol = err instanceof ProtocolError || err instanceof LineTooLongError;
        const msg = err instanceof CutStreamError ? 'feed stream cut' : protocol ? 'feed protocol error' : 'feed stream failed';
        (protocol ? this.o.logger.error : this.o.logger.warn).call(this.o.logger, { err, cursor: this.committed }, msg);
      }
      await this.sleep(this.o.backoffMinMs + Math.random() * (this.o.backoffMaxMs - this.o.backoffMinMs));
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wakeSleep = done;
    });
  }

  // Over 80 lines on purpose: one response's life (request, status answers, the line loop and
  // its cursor rules, the cut) reads as one sequence; split, the cursor rules would be scattered.
  private async session(full: boolean, handedOver: () => void): Promise<Outcome> {
    const url = new URL('/v1/cluster/changes', this.o.controlPlaneUrl);
    url.searchParams.set('region', this.o.region);
    if (this.o.handover) url.searchParams.set('handover', '1');
    if (!full) url.searchParams.set('cursor', this.committed!);
    // A long poll lasts up to ctrl's wait limit (tens of seconds) and goes on with changes after
    // its snapshot; the next full sync is due when the resync interval says, so every poll asks
    // to end by then and the loop's next round is that full sync (a resync interval shorter
    // than the wait would otherwise only ever run at the wait's pace).
    const dueAt = (full ? Date.now() : this.lastSnapshotAt) + this.o.resyncIntervalMs;
    const wait = Math.min(this.o.waitSeconds ?? Infinity, Math.max(0.1, (dueAt - Date.now()) / 1000));
    if (wait !== undefined && Number.isFinite(wait)) url.searchParams.set('wait', wait.toFixed(3));
    const ac = new AbortController();
    this.current = ac;
    // One timer per poll, restarted by each line (not a new timer per line per agent).
    const idle = setTimeout(() => ac.abort(new CutStreamError('no line within the idle timeout')), this.o.idleTimeoutMs);
    const armIdle = () => idle.refresh();
    // Set by a handler that failed for good; the stream is abandoned at once.
    let failure: unknown;
    // Set by the handover line: the rest of this poll is read as a drain (overlap.ts).
    let drain: Drain | undefined;
    const failWith = (err: unknown) => {
      failure ??= err;
      ac.abort(err);
    };
    this.stats.streams++;
    try {
      const res = await get(url, this.o.token, ac.signal);
      if (res.statusCode === 410) {
        res.resume();
        this.o.logger.info({ cursor: this.committed }, 'feed cursor expired, starting a full sync');
        return 'reset';
      }
      if (res.statusCode === 503 || res.statusCode === 429) {
        // Turned away for now (every full-sync slot taken when a fleet starts at once, or the
        // token's stream limit): back-pressure, waited out as asked and spread over up to twice
        // that, so a thousand agents told "1 s" do not all come back in the same millisecond.
        // Other 503s (database or feed down) stay failures: they are worth a warning.
        const text = await readText(res).catch(() => '');
        const code = /"code":"(ERR_FEED_SYNC_BUSY|ERR_FEED_TOO_MANY_STREAMS)"/.exec(text)?.[1];
        if (code) {
          const waitS = retryAfterSeconds(res.headers['retry-after']);
          this.o.logger.debug({ status: res.statusCode, code, retryAfter: waitS }, 'feed poll deferred by ctrl');
          return { deferMs: Math.min(waitS, 60) * 1000 * (1 + Math.random()) };
        }
        throw new Error(`ctrl answered ${res.statusCode}: ${text.slice(0, 200)}`);
      }
      if (res.statusCode === 400 && !full) {
        let code: string | undefined;
        try {
          code = (JSON.parse(await readText(res)) as { error?: { code?: string } }).error?.code;
        } catch {
          code = undefined;
        }
        if (code === 'ERR_FEED_CURSOR_INVALID') return 'reset';
        throw new Error(`ctrl answered 400 ${code ?? ''}`);
      }
      if (res.statusCode !== 200) {
        const text = await readText(res).catch(() => '');
        throw new Error(`ctrl answered ${res.statusCode}: ${text.slice(0, 200)}`);
      }
      // This poll now sends everything after its cursor: the handed-over ones are done.
      this.overlap.end();

      const tracker = new CursorTracker((c) => {
        this.committed = c;
      }, failWith);
      let snapshot: { seen: Set<string>; jobs: Promise<void>[] } | undefined;
      let snapshotDone = !full;
      let ended = false;
      // Lines already received are handled without an await each (only for bytes not yet here).
      const reader = new LineReader(res, this.o.maxLineBytes);
      try {
        for (;;) {
          const raw = reader.next() ?? (await reader.more());
          if (raw === null) break;
          armIdle();
          if (failure) throw failure;
          if (ended) throw new ProtocolError('line after end');
          let json: unknown;
          try {
            json = JSON.parse(raw);
          } catch {
            throw new ProtocolError(`line is not JSON: ${raw.slice(0, 200)}`);
          }
          const parsed = StreamLine.safeParse(json);
          if (!parsed.success) throw new ProtocolError(`unknown or malformed line: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
          const line = parsed.data;
          switch (line.type) {
            case 'snapshot_begin':
              if (!full || snapshot) throw new ProtocolError('unexpected snapshot_begin');
              snapshot = { seen: new Set(), jobs: [] };
              this.stats.snapshotsStarted++;
              break;
            case 'change': {
              if (line.resource.region !== this.o.region) throw new ProtocolError(`change for region ${line.resource.region}`);
              if (!snapshotDone && !snapshot) throw new ProtocolError('change before snapshot_begin');
              if (snapshotDone && !line.cursor) throw new ProtocolError('incremental change without cursor');
              // Awaited only at the bound: an await per line costs a turn of the microtask queue.
              if (this.dispatcher.backlog >= this.o.maxBacklog) await this.dispatcher.waitForRoom(this.o.maxBacklog);
              const submit = () =>
                this.dispatcher.submit(line.resource, line.state, line.traceparent).then(() => {
                  this.stats.events++;
                });
              if (drain) {
                if (this.overlap.dispatch(drain, line.cursor!, submit)) this.stats.drainedEvents++;
                break;
              }
              // A change a handed-over poll already dispatched is not applied twice. Its job is
              // waited for here, before the next line is read: when it failed, the copy is
              // submitted now, in this poll's order; submitted on the failure instead, it could
              // land after a newer state of its resource from a later line and overwrite it.
              const drained = snapshotDone ? this.overlap.take(line.cursor!) : undefined;
              const job = drained && (await drained.then(() => true, () => false)) ? Promise.resolve() : submit();
              if (!snapshotDone) {
                if (line.state.action === 'apply') snapshot!.seen.add(refKey(line.resource));
                job.catch(failWith);
                snapshot!.jobs.push(job);
              } else {
                tracker.add(line.cursor!, job);
              }
              break;
            }
            case 'snapshot_end':
              if (!snapshot || snapshotDone) throw new ProtocolError('unexpected snapshot_end');
              // Every snapshot event handled, then GC, then the cursor: in that order only.
              await Promise.all(snapshot.jobs);
              await this.overlap.settled();
              await this.o.controller.gc(snapshot.seen);
              this.committed = line.cursor;
              this.lastSnapshotAt = Date.now();
              this.stats.snapshotsCompleted++;
              snapshotDone = true;
              snapshot.jobs = [];
              break;
            case 'heartbeat':
              break;
            case 'handover':
              if (!snapshotDone || drain) throw new ProtocolError('unexpected handover');
              await tracker.settled();
              if (failure) throw failure;
              this.committed = line.cursor;
              this.stats.handovers++;
              drain = this.overlap.begin(ac);
              if (this.current === ac) this.current = undefined;
              handedOver();
              break;
            case 'end':
              if (!snapshotDone) throw new ProtocolError('end before snapshot_end');
              await tracker.settled();
              if (failure) throw failure;
              // After a handover the next poll holds the cursor: this one's is not committed.
              if (!drain) this.committed = line.cursor;
              ended = true;
              break;
          }
        }
      } catch (err) {
        // Closed once the next poll was answered, or failed after its handover: not a failure.
        if (drain) return 'ok';
        // An abort caused by a failed handler or the idle timer surfaces as the real reason.
        throw failure ?? (ac.signal.aborted && ac.signal.reason instanceof Error ? ac.signal.reason : err);
      } finally {
        reader.close();
        // Whatever happened, commit what was handled in order (never in a snapshot: nothing
        // there is tracked), so the reconnect resumes right after the last handled event.
        await tracker.settled();
      }
      if (!ended) {
        if (this.stopped || drain) return 'ok';
        throw new CutStreamError(snapshotDone ? 'stream ended without end' : 'stream ended without snapshot_end');
      }
      return 'ok';
    } finally {
      clearTimeout(idle);
      if (this.current === ac) this.current = undefined;
      if (drain) this.overlap.finish(drain);
    }
  }
}
