// apply_failures: desired states krane could not apply for a reason retrying cannot fix, one row
// per (resource, region). krane reports outcomes per resource in the order they happened; they
// are applied here in that order, so a failure that was later cleared never comes back.
import type { Queryable } from './db';

export type ApplyResourceType = 'deployment_topology' | 'sentinel' | 'cilium_network_policy' | 'environment_routes';

export type ApplyOutcome =
  | { resourceType: ApplyResourceType; resourceId: string; outcome: 'failed'; code: string; reason: string }
  | { resourceType: ApplyResourceType; resourceId: string; outcome: 'succeeded' };

export interface ApplyFailure {
  resourceType: ApplyResourceType;
  resourceId: string;
  region: string;
  code: string;
  reason: string;
  failedAt: Date;
}

/** Applies outcomes of one region strictly in the given order (the last one per resource wins). */
export async function recordApplyOutcomes(q: Queryable, region: string, outcomes: ApplyOutcome[]): Promise<void> {
  for (const o of outcomes) {
    if (o.outcome === 'failed') {
      await q`
        INSERT INTO apply_failures (resource_type, resource_id, region, code, reason)
        VALUES (${o.resourceType}, ${o.resourceId}, ${region}, ${o.code}, ${o.reason})
        ON CONFLICT (resource_type, resource_id, region) DO UPDATE
          SET code = EXCLUDED.code, reason = EXCLUDED.reason, failed_at = now()`;
    } else {
      await q`DELETE FROM apply_failures WHERE resource_type = ${o.resourceType} AND resource_id = ${o.resourceId} AND region = ${region}`;
    }
  }
}

export async function listApplyFailures(q: Queryable, resourceType: ApplyResourceType, resourceId: string): Promise<ApplyFailure[]> {
  return q<ApplyFailure[]>`
    SELECT resource_type, resource_id, region, code, reason, failed_at FROM apply_failures
    WHERE resource_type = ${resourceType} AND resource_id = ${resourceId} ORDER BY region`;
}

export interface GcStatusRow {
  region: string;
  held: boolean;
  wouldDelete: number;
  managed: number;
  maxFraction: number;
  reportedAt: Date;
}

/** Keeps the latest GC brake state per region; an older report never overwrites a newer one. */
export async function recordGcStatus(q: Queryable, s: GcStatusRow): Promise<void> {
  await q`
    INSERT INTO krane_gc_status (region, held, would_delete, managed, max_fraction, reported_at)
    VALUES (${s.region}, ${s.held}, ${s.wouldDelete}, ${s.managed}, ${s.maxFraction}, ${s.reportedAt})
    ON CONFLICT (region) DO UPDATE
      SET held = EXCLUDED.held, would_delete = EXCLUDED.would_delete, managed = EXCLUDED.managed,
          max_fraction = EXCLUDED.max_fraction, reported_at = EXCLUDED.reported_at
      WHERE krane_gc_status.reported_at <= EXCLUDED.reported_at`;
}

export async function getGcStatus(q: Queryable, region: string): Promise<GcStatusRow | undefined> {
  const [row] = await q<GcStatusRow[]>`SELECT region, held, would_delete, managed, max_fraction, reported_at FROM krane_gc_status WHERE region = ${region}`;
  return row;
}
