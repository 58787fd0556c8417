// Agent liveness, shared by both ends: the heartbeat krane sends (POST /v1/cluster/heartbeat)
// and the pure rules ctrl applies to what it has heard. Data in, data out; no I/O, so the rules
// are table-tested (tests/sync/liveness.test.ts). A leaf: imports nothing but zod.
import { z } from 'zod';

/** What krane reports every HEARTBEAT_INTERVAL_MS and after each committed cursor. */
export const Heartbeat = z.object({
  region: z.string().min(1).max(63),
  /** One krane process (pod name or a random id): tells replicas apart. */
  agentId: z.string().min(1).max(253),
  version: z.string().min(1).max(64),
  /** True when this replica holds the Lease (or runs without leader election). */
  leader: z.boolean(),
  /** The committed feed cursor; absent before the first complete full sync. */
  cursor: z.string().min(1).max(200).optional(),
  /** Managed objects in the cluster by kind, as the agent's watches see them. */
  objects: z.record(z.string().max(128), z.number().int().min(0)).default({}),
  lastFullSyncAt: z.iso.datetime().optional(),
  /** Objects the agent put back after changes behind its back, since it started. */
  drift: z
    .object({
      repaired: z.number().int().min(0),
      byKind: z.record(z.string().max(128), z.number().int().min(0)).default({}),
      lastAt: z.iso.datetime().optional(),
      lastObject: z.string().max(400).optional(),
    })
    .optional(),
});
export type Heartbeat = z.infer<typeof Heartbeat>;

/** Every 10 s (API.md): a third of the default offline threshold, so one lost beat is not an outage. */
export const HEARTBEAT_INTERVAL_MS = 10_000;
/** Defaults of ctrl's --agent-offline-after and --offline-grace (API.md). */
export const DEFAULT_OFFLINE_AFTER_MS = 30_000;
export const DEFAULT_OFFLINE_GRACE_MS = 60_000;

export type RegionStatus = 'online' | 'offline' | 'never_seen';

/** A region's status from when it last showed a sign of life (heartbeat or open stream). */
export function regionStatus(lastSeenAt: Date | null | undefined, now: Date, offlineAfterMs: number): RegionStatus {
  if (!lastSeenAt) return 'never_seen';
  return now.getTime() - lastSeenAt.getTime() > offlineAfterMs ? 'offline' : 'online';
}

export interface Lag {
  /** Settled changes of the region past the agent's committed cursor. */
  changes: number;
  /** Age of the oldest of them, in whole seconds (0 when there are none). */
  seconds: number;
}

/** Lag from the count of pending changes and the creation time of the oldest one. */
export function lagOf(pending: number, oldest: Date | null, now: Date): Lag {
  if (pending <= 0 || !oldest) return { changes: Math.max(0, pending), seconds: 0 };
  return { changes: pending, seconds: Math.max(0, Math.floor((now.getTime() - oldest.getTime()) / 1000)) };
}

/**
 * Whether a deploy waiting on `region` should give up: the region is offline (or was never
 * seen) and has been since longer than the grace, counted from the later of when the region
 * went quiet and when the wait started (a region already offline gets the whole grace too).
 */
export function offlinePastGrace(
  r: { lastSeenAt: Date | null },
  waitStartedAt: Date,
  now: Date,
  offlineAfterMs: number,
  graceMs: number,
): boolean {
  if (regionStatus(r.lastSeenAt, now, offlineAfterMs) === 'online') return false;
  const quietSince = r.lastSeenAt ? r.lastSeenAt.getTime() + offlineAfterMs : 0;
  return now.getTime() - Math.max(quietSince, waitStartedAt.getTime()) >= graceMs;
}
