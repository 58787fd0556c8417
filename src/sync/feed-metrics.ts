// The change feed's Prometheus metrics, read from the live parts at scrape time.
import client, { type Registry } from 'prom-client';

export interface FeedGauges {
  openStreams(): number;
  bufferedChanges(): number;
  bufferedBytes(): number;
  tailQueries(): number;
  settleLagSeconds(): number;
  settleBlocked(): number;
  snapshotsQueued(): number;
  snapshotReads(): { standby: number; primary: number; fallbacks: number };
}

export function registerFeedMetrics(registry: Registry, g: FeedGauges): void {
  const gauge = (name: string, help: string, read: () => number) =>
    new client.Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  gauge('feed_open_streams', 'Change feed long polls currently open on this ctrl', g.openStreams);
  gauge('feed_buffered_changes', 'Settled outbox rows held in memory for streams', g.bufferedChanges);
  gauge('feed_buffered_bytes', 'Estimated bytes of desired states and lines held in the feed buffer', g.bufferedBytes);
  gauge('feed_settle_lag_seconds', 'How long the oldest committed change has waited for older transactions to end', g.settleLagSeconds);
  gauge('feed_settle_blocked', '1 while the settle lag is past its threshold (a transaction holds the feed back)', g.settleBlocked);
  gauge('feed_snapshots_queued', 'Full syncs waiting for a snapshot slot', g.snapshotsQueued);
  new client.Counter({
    name: 'feed_snapshot_reads_total',
    help: 'Full syncs by where their snapshot was read: a hot standby (--database-read-url) or the primary',
    labelNames: ['source'],
    registers: [registry],
    collect() {
      const r = g.snapshotReads();
      this.reset();
      this.inc({ source: 'standby' }, r.standby);
      this.inc({ source: 'primary' }, r.primary);
    },
  });
  new client.Counter({
    name: 'feed_snapshot_standby_fallbacks_total',
    help: 'Full syncs that wanted the standby but read the primary (it lagged, was of another epoch, or failed)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(g.snapshotReads().fallbacks);
    },
  });
  new client.Counter({
    name: 'feed_tail_queries_total',
    help: 'Outbox tail queries (one per poll, whatever the number of agents)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(g.tailQueries());
    },
  });
}
