// sentinel_rollout_items: one row per sentinel of the current fleet rollout (its wave, outcome
// and the image a rollback returns it to). The rollout workflow writes them inside its journaled
// transactions (runTx), so each write commits exactly once with the step that made it; the API
// reads them in keyset pages. Nothing here knows waves are percentages: the plan receives them.
import type { Queryable } from './db';

export const ITEM_STATUSES = ['pending', 'READY', 'FAILED', 'SKIPPED'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];

export interface RolloutItem {
  sentinelId: string;
  wave: number;
  status: ItemStatus;
  reason: string | null;
  previousImage: string;
}

export interface WaveCount {
  wave: number;
  total: number;
  succeeded: number;
  failed: number;
  skipped: number;
  pending: number;
}

/**
 * Places every running sentinel not yet on `image` into a wave, in id order, by cumulative
 * percentage: wave i ends at ceil(n × p_i / 100), as computeWaves (src/workflow/fleet/waves.ts) does
 * in memory, and empty waves are dropped (dense_rank). One statement, so the fleet it counts is
 * the fleet it places. Rows of earlier rollouts go. Returns the sizes of the waves and how many
 * running sentinels were already on the image.
 */
export async function planRollout(q: Queryable, rolloutId: string, image: string, percentages: readonly number[]): Promise<{ waveSizes: number[]; alreadyOnImage: number }> {
  await q`DELETE FROM sentinel_rollout_items WHERE rollout_id <> ${rolloutId}`;
  await q`
    WITH fleet AS (
      SELECT id, image, row_number() OVER (ORDER BY id) AS rn, count(*) OVER () AS n
      FROM sentinels WHERE desired_state = 'running' AND image <> ${image}
    ), placed AS (
      SELECT id, image,
        (SELECT min(p.i) FROM unnest(${percentages as number[]}::float8[]) WITH ORDINALITY AS p(v, i)
          WHERE fleet.rn <= ceil(fleet.n * p.v / 100)) AS raw
      FROM fleet
    )
    INSERT INTO sentinel_rollout_items (rollout_id, sentinel_id, wave, previous_image)
    SELECT ${rolloutId}, id, (dense_rank() OVER (ORDER BY raw) - 1)::int, image FROM placed
    ON CONFLICT DO NOTHING`;
  const sizes = await q<{ wave: number; n: number }[]>`
    SELECT wave, count(*)::int AS n FROM sentinel_rollout_items WHERE rollout_id = ${rolloutId} GROUP BY wave ORDER BY wave`;
  const [on] = await q<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE desired_state = 'running' AND image = ${image}`;
  return { waveSizes: sizes.map((s) => s.n), alreadyOnImage: on?.n ?? 0 };
}

/** Rows carried over from a rollout saved before this table existed (its state held them). */
export async function insertItems(q: Queryable, rolloutId: string, items: readonly RolloutItem[]): Promise<void> {
  if (items.length === 0) return;
  await q`
    INSERT INTO sentinel_rollout_items (rollout_id, sentinel_id, wave, status, reason, previous_image)
    SELECT ${rolloutId}, * FROM unnest(
      ${items.map((i) => i.sentinelId)}::text[], ${items.map((i) => i.wave)}::int[], ${items.map((i) => i.status)}::text[],
      ${items.map((i) => i.reason) as string[]}::text[], ${items.map((i) => i.previousImage)}::text[])
    ON CONFLICT DO NOTHING`;
}

/** The next `limit` sentinels of a wave still pending, in id order. */
export async function pendingInWave(q: Queryable, rolloutId: string, wave: number, limit: number): Promise<string[]> {
  const rows = await q<{ sentinelId: string }[]>`
    SELECT sentinel_id FROM sentinel_rollout_items
    WHERE rollout_id = ${rolloutId} AND wave = ${wave} AND status = 'pending'
    ORDER BY sentinel_id LIMIT ${limit}`;
  return rows.map((r) => r.sentinelId);
}

/** Records outcomes of a page of sentinels (one statement however many). */
export async function recordOutcomes(q: Queryable, rolloutId: string, outcomes: readonly { id: string; status: Exclude<ItemStatus, 'pending'>; reason: string | null }[]): Promise<void> {
  if (outcomes.length === 0) return;
  await q`
    UPDATE sentinel_rollout_items i SET status = o.status, reason = o.reason, updated_at = now()
    FROM unnest(${outcomes.map((o) => o.id)}::text[], ${outcomes.map((o) => o.status)}::text[], ${outcomes.map((o) => o.reason) as string[]}::text[]) AS o(id, status, reason)
    WHERE i.rollout_id = ${rolloutId} AND i.sentinel_id = o.id`;
}

/** Per-wave counts by outcome, in wave order. */
export async function waveCounts(q: Queryable, rolloutId: string): Promise<WaveCount[]> {
  return q<WaveCount[]>`
    SELECT wave, count(*)::int AS total,
      count(*) FILTER (WHERE status = 'READY')::int AS succeeded,
      count(*) FILTER (WHERE status = 'FAILED')::int AS failed,
      count(*) FILTER (WHERE status = 'SKIPPED')::int AS skipped,
      count(*) FILTER (WHERE status = 'pending')::int AS pending
    FROM sentinel_rollout_items WHERE rollout_id = ${rolloutId} GROUP BY wave ORDER BY wave`;
}

/** A keyset page of the rollout's sentinels in id order after `after`, narrowed by outcome and wave. */
export async function listItems(q: Queryable, rolloutId: string, where: { status?: ItemStatus; wave?: number }, after: string, limit: number): Promise<RolloutItem[]> {
  return q<RolloutItem[]>`
    SELECT sentinel_id, wave, status, reason, previous_image FROM sentinel_rollout_items
    WHERE rollout_id = ${rolloutId} AND sentinel_id > ${after}
      AND (${where.status ?? null}::text IS NULL OR status = ${where.status ?? null})
      AND (${where.wave ?? null}::int IS NULL OR wave = ${where.wave ?? null})
    ORDER BY sentinel_id LIMIT ${limit}`;
}

/**
 * The next page of sentinels a rollback must revert: those that reached the image, and failed
 * ones whose desired image is already it (they may run it, or keep trying to); skipped ones
 * never got it. Reverted rows are marked by markReverted, so pages advance without a cursor.
 */
export async function toRevert(q: Queryable, rolloutId: string, image: string, limit: number): Promise<{ id: string; previousImage: string }[]> {
  return q<{ id: string; previousImage: string }[]>`
    SELECT i.sentinel_id AS id, i.previous_image FROM sentinel_rollout_items i JOIN sentinels s ON s.id = i.sentinel_id
    WHERE i.rollout_id = ${rolloutId} AND NOT i.reverted
      AND (i.status = 'READY' OR (i.status = 'FAILED' AND s.image = ${image}))
    ORDER BY i.sentinel_id LIMIT ${limit}`;
}

export async function markReverted(q: Queryable, rolloutId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await q`UPDATE sentinel_rollout_items SET reverted = true, updated_at = now() WHERE rollout_id = ${rolloutId} AND sentinel_id = ANY(${ids as string[]}::text[])`;
}
