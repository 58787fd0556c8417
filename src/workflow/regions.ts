// The region registry on ctrl: which regions exist (those with an agent token), whether their
// agents are alive, how far behind they are, and who leads. One per ctrl process.
//
// Signs of life are heartbeats (POST /v1/cluster/heartbeat, any replica) and open feed streams
// (counted per replica in memory; the replica holding a stream marks its region seen every
// tick). Every replica runs the same tick: it judges each region by the database's clock and
// moves the announced status with a conditional UPDATE (store/regions.ts#settleStatus, which decides from the row it writes), so each
// online/offline change is announced once as `region.status`, whichever replica sees it first.
//
// Also the check that deploys and sentinel deploys name known regions (ERR_REGION_UNKNOWN, a
// 400 listing the known ones), and the per-region Prometheus gauges.
import client from 'prom-client';
import { AppError, type ErrorDetail } from '../errors';
import type { Logger } from '../log';
import type { Queryable, Sql } from '../store/db';
import * as store from '../store/regions';
import { lagOf, offlinePastGrace, regionStatus, type Lag, type RegionStatus } from '../sync/liveness';

export interface RegionView {
  name: string;
  status: RegionStatus;
  lastSeenAt: string | null;
  agent: { id: string | null; version: string | null; leader: boolean };
  lag: Lag;
  lastFullSyncAt: string | null;
  objects: Record<string, number>;
  /** Objects the leading krane put back after changes behind its back (since it started). */
  drift: { repaired: number; lastAt: string | null; lastObject: string | null; byKind: Record<string, number> };
  /** Desired states the cluster refused (newest first): what keeps the region from matching. */
  failures: store.RegionRow['failures'];
}

/**
 * A region's view. `scoped` (a key's): apply failures come scoped from the store, and drift's
 * last object, which names whoever's object krane put back, is left out.
 */
export function regionView(r: store.RegionRow, offlineAfterMs: number, scoped = false): RegionView {
  return {
    name: r.region,
    status: regionStatus(r.lastSeenAt, r.now, offlineAfterMs),
    lastSeenAt: r.lastSeenAt?.toISOString() ?? null,
    agent: { id: r.agentId, version: r.agentVersion, leader: r.agentLeader },
    lag: lagOf(r.pendingChanges, r.oldestPendingAt, r.now),
    lastFullSyncAt: r.lastFullSyncAt?.toISOString() ?? null,
    objects: r.objects,
    drift: { repaired: r.drift?.repaired ?? 0, lastAt: r.drift?.lastAt ?? null, lastObject: scoped ? null : (r.drift?.lastObject ?? null), byKind: r.drift?.byKind ?? {} },
    failures: r.failures ?? [],
  };
}

/**
 * Throws ERR_REGION_UNKNOWN (400) unless every name is a known region; the message and each
 * detail list the known regions, so the caller can correct the request.
 */
export async function assertKnownRegions(q: Queryable, names: readonly string[], field = 'regions'): Promise<void> {
  const known = await store.knownRegions(q);
  const set = new Set(known);
  const details: ErrorDetail[] = [];
  names.forEach((n, i) => {
    if (!set.has(n)) details.push({ field: names.length === 1 && field !== 'regions' ? field : `${field}.${i}`, message: `unknown region "${n}"; known regions: ${known.join(', ') || '(none)'}` });
  });
  if (details.length === 0) return;
  const unknown = details.length === 1 ? `region ${JSON.stringify(names.find((n) => !set.has(n)))} is` : `regions ${names.filter((n) => !set.has(n)).map((n) => JSON.stringify(n)).join(', ')} are`;
  throw new AppError('ERR_REGION_UNKNOWN', `${unknown} not known (a region exists once it has an agent token); known regions: ${known.join(', ') || '(none)'}`, { details });
}

/**
 * Which of `regions` are offline (or never seen) now, and, when one of them has been offline for
 * longer than the grace, why a wait on them should end (null: keep waiting).
 */
export type OfflineCheck = (regions: readonly string[], startedAt: number) => Promise<{ offline: string[]; reason: string | null }>;

/**
 * The check deploy and sentinel waits run on each re-check (src/workflow/deploy/wait.ts), and a
 * canary's or blue-green's holds on each check (canary.ts: no promotion while a target region is
 * offline, since its instance rows are what krane last said, not what runs): a region offline
 * (or never seen) for longer than the grace, counted from the later of when it went quiet and
 * when the wait began, ends the wait with the region and its last sign of life named.
 */
export function offlineCheck(sql: Sql, offlineAfterMs: number, graceMs: number): OfflineCheck {
  return async (regions, startedAt) => {
    const { now, seen } = await store.lastSeen(sql, regions);
    const offline: string[] = [];
    let reason: string | null = null;
    for (const region of regions) {
      const lastSeenAt = seen.get(region) ?? null;
      if (regionStatus(lastSeenAt, now, offlineAfterMs) === 'online') continue;
      offline.push(region);
      if (reason || !offlinePastGrace({ lastSeenAt }, new Date(startedAt), now, offlineAfterMs, graceMs)) continue;
      const when = lastSeenAt ? `last seen ${lastSeenAt.toISOString()}` : 'never seen';
      reason = `region ${region} is offline (${when}); gave up after the offline grace of ${Math.round(graceMs / 1000)} s`;
    }
    return { offline, reason };
  };
}

export interface RegionRegistryOptions {
  sql: Sql;
  logger: Logger;
  /** --agent-offline-after: no sign of life for this long means offline. */
  offlineAfterMs: number;
  /** --offline-grace: how long a deploy waits for an offline region. */
  offlineGraceMs: number;
  /** How often to mark streamed regions seen and look for status changes. */
  tickMs?: number;
}

/**
 * A fifth of the offline threshold (6 s by default): a region held only by a stream stays
 * marked seen well within the threshold, and a change is announced at most this late.
 */
const tickFor = (offlineAfterMs: number) => Math.max(100, Math.floor(offlineAfterMs / 5));

export class RegionRegistry {
  readonly offlineAfterMs: number;
  readonly offlineGraceMs: number;
  private readonly streams = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(private readonly o: RegionRegistryOptions) {
    this.offlineAfterMs = o.offlineAfterMs;
    this.offlineGraceMs = o.offlineGraceMs;
  }

  /** Every region's view; for a key's scope, only that scope's apply failures and no drift object. */
  async list(only?: string, scope: store.FailureScope | null = null): Promise<RegionView[]> {
    return (await store.listRegions(this.o.sql, only, scope)).map((r) => regionView(r, this.offlineAfterMs, scope !== null));
  }

  /**
   * Status and last sign of life of `regions` alone, without lag: one lookup by key, for views
   * polled every few seconds (a deployment's detail) where list()'s count of pending changes
   * per region would be repeated work.
   */
  async liveness(regions: readonly string[]): Promise<Map<string, { status: RegionStatus; lastSeenAt: string | null }>> {
    const { now, seen } = await store.lastSeen(this.o.sql, regions);
    return new Map(
      regions.map((r) => {
        const at = seen.get(r) ?? null;
        return [r, { status: regionStatus(at, now, this.offlineAfterMs), lastSeenAt: at?.toISOString() ?? null }];
      }),
    );
  }

  /** Open feed streams of a region on this replica. */
  streamCount(region: string): number {
    return this.streams.get(region) ?? 0;
  }

  /** An agent opened a feed stream on this replica: a sign of life now and on every tick until it closes. */
  streamOpened(region: string): void {
    this.streams.set(region, this.streamCount(region) + 1);
    void store.touchRegions(this.o.sql, [region]).then(() => this.settle(region)).catch((err) => this.o.logger.warn({ err, region }, 'could not record stream as sign of life'));
  }

  streamClosed(region: string): void {
    const n = this.streamCount(region) - 1;
    if (n > 0) this.streams.set(region, n);
    else this.streams.delete(region);
  }

  /** Moves the announced status of one region to what its last sign of life says at the write;
   *  logs the change on the replica that made it. */
  async settle(region: string): Promise<void> {
    const status = await store.settleStatus(this.o.sql, region, this.offlineAfterMs);
    if (status) this.o.logger.info({ region, status }, 'region status changed');
  }

  async tick(): Promise<void> {
    await store.touchRegions(this.o.sql, [...this.streams.keys()]);
    for (const region of await store.knownRegions(this.o.sql)) await this.settle(region);
  }

  start(): void {
    const every = this.o.tickMs ?? tickFor(this.offlineAfterMs);
    this.timer = setInterval(() => {
      this.ticking ??= this.tick()
        .catch((err) => this.o.logger.warn({ err }, 'region liveness tick failed'))
        .finally(() => (this.ticking = undefined));
    }, every);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
  }

  /** Per-region gauges, read from the database at scrape time (any replica answers the same). */
  registerMetrics(registry: client.Registry): void {
    const gauge = (name: string, help: string, value: (r: RegionView) => number | null) =>
      new client.Gauge({
        name,
        help,
        labelNames: ['region'],
        registers: [registry],
        collect: async function (this: client.Gauge) {
          this.reset();
          for (const r of await views()) {
            const v = value(r);
            if (v !== null) this.set({ region: r.name }, v);
          }
        },
      });
    // One query per scrape for all six gauges: they collect one after another.
    let cached: { at: number; p: Promise<RegionView[]> } | undefined;
    const views = () => {
      if (!cached || Date.now() - cached.at > 1_000) cached = { at: Date.now(), p: this.list().catch(() => []) };
      return cached.p;
    };
    gauge('unkey_region_up', '1 when the region\'s agent showed a sign of life within --agent-offline-after', (r) => (r.status === 'online' ? 1 : 0));
    gauge('unkey_region_last_seen_timestamp_seconds', 'When the region\'s agent last showed a sign of life (Unix time)', (r) =>
      r.lastSeenAt ? Date.parse(r.lastSeenAt) / 1000 : null,
    );
    gauge('unkey_region_lag_changes', 'Settled changes of the region past its agent\'s committed cursor', (r) => r.lag.changes);
    gauge('unkey_region_lag_seconds', 'Age of the oldest change the region\'s agent has not committed', (r) => r.lag.seconds);
    gauge('unkey_region_streams', 'Open change-feed streams of the region on this ctrl replica', (r) => this.streamCount(r.name));
    // What keeps a region from matching its desired state: the alert UnkeyDesiredStateRefused.
    gauge('unkey_region_apply_failures', 'Desired states the region\'s cluster refused that no later apply cleared (at most 20 are counted)', (r) => r.failures.length);
  }
}
