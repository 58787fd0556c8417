// Settle lag: the feed sends a change only once every older transaction on the server has
// ended (store/changes.ts), so one session left idle in a transaction, in any database of the
// server, stalls every region's feed. SettleWatch notices: past a threshold it looks up the
// backend with the oldest running transaction id in pg_stat_activity, logs it (once per
// blocker), and serves it to /readyz and /metrics. The query text is never read.
import type { Logger } from '../log';
import type { Sql } from '../store/db';
import { oldestOpenTransaction, type OpenTransaction } from '../store/system';
import type { Tailer } from './tailer';

/**
 * Settle lag past which the feed counts as blocked. Ordinary writes settle in milliseconds and
 * a long migration or bulk write in a few seconds; 30 s of a change waiting is a stuck session.
 */
export const DEFAULT_SETTLE_LAG_MAX_MS = 30_000;
/** How often the lag is compared with the threshold; a blocker lookup only happens past it. */
const CHECK_EVERY_MS = 1_000;

export class SettleWatch {
  /** The blocking backend found by the last check past the threshold. */
  blocker: OpenTransaction | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly o: { tailer: Tailer; sql: Sql; logger: Logger; maxLagMs: number },
  ) {}

  get lagMs(): number {
    return this.o.tailer.settleLagMs;
  }

  get blocked(): boolean {
    return this.lagMs >= this.o.maxLagMs;
  }

  start(): void {
    this.timer = setInterval(() => void this.check(), Math.min(CHECK_EVERY_MS, this.o.maxLagMs));
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      if (!this.blocked) {
        if (this.blocker) this.o.logger.info({ pid: this.blocker.pid }, 'feed settle lag back to normal');
        this.blocker = undefined;
        return;
      }
      const b = await oldestOpenTransaction(this.o.sql);
      if (b && b.pid !== this.blocker?.pid) {
        this.o.logger.warn({ lagMs: this.lagMs, blocker: b }, 'feed settle blocked by an open transaction');
      }
      this.blocker = b;
    } catch (err) {
      this.o.logger.warn({ err }, 'feed settle blocker lookup failed');
    } finally {
      this.checking = false;
    }
  }

  /** The /readyz reason while blocked, else null. */
  reason(): string | null {
    if (!this.blocked) return null;
    const lag = `the change feed has waited ${Math.round(this.lagMs / 1000)} s for older transactions to end`;
    const b = this.blocker;
    if (!b) return `${lag}; blocking backend not identified yet`;
    const since = b.xactStart ? `, open since ${b.xactStart.toISOString()}` : '';
    return `${lag}; oldest open transaction: backend pid ${b.pid} (application ${b.applicationName || '(none)'}, user ${b.user ?? '?'}, database ${b.database ?? '?'}, ${b.state ?? 'unknown state'}${since})`;
  }
}
