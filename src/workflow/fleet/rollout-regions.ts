// What fleet rollouts (rollout.ts) need to know about regions: which sentinels of a wave sit in
// regions that are offline when the wave starts (skipped, not waited for), and which failed
// sentinels already had the new image written (RollbackAll reverts those too). Kept apart so
// rollout.ts only calls them; each runs inside a journaled step there.
import type { Sql } from '../../store/db';
import * as store from '../../store/regions';
import { regionStatus } from '../../sync/liveness';

export interface RolloutRegions {
  /** Sentinel id → why it is skipped, for the sentinels among `ids` whose region is not online. */
  offlineSentinels(ids: readonly string[]): Promise<Record<string, string>>;
  /** The failed sentinels whose desired image is already `image` (so they may run it, or try to). */
  written(ids: readonly string[], image: string): Promise<string[]>;
}

export function rolloutRegions(sql: Sql, offlineAfterMs: number): RolloutRegions {
  return {
    async offlineSentinels(ids) {
      const out: Record<string, string> = {};
      for (const r of await store.sentinelRegionsSeen(sql, ids)) {
        const status = regionStatus(r.lastSeenAt, r.now, offlineAfterMs);
        if (status === 'online') continue;
        out[r.id] = status === 'never_seen'
          ? `region ${r.region} has never been seen online`
          : `region ${r.region} is offline (last seen ${r.lastSeenAt!.toISOString()})`;
      }
      return out;
    },
    written: (ids, image) => store.sentinelsWithImage(sql, ids, image),
  };
}
