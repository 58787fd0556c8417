// api_idempotency_keys: which call a client's Idempotency-Key already made (sql/0031). The row
// goes in the transaction of the call's own change (the HTTP layer passes it as the command's
// `alongside`), so a key is on record exactly when its effect committed.
import type { Queryable, TxSql } from './db';

export interface IdempotentCall {
  route: string;
  requestHash: string;
  targetId: string;
}

/** A day: longer than any client retries one call, short enough that the table stays small. */
export const IDEMPOTENCY_TTL_HOURS = 24;
/** Expired rows deleted per recorded key: cleanup in small, bounded steps on the write path. */
const CLEANUP_PER_RECORD = 20;

export async function findIdempotent(q: Queryable, principal: string, key: string): Promise<IdempotentCall | undefined> {
  const [row] = await q<IdempotentCall[]>`
    SELECT route, request_hash, target_id FROM api_idempotency_keys
    WHERE principal = ${principal} AND key = ${key} AND created_at > now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`;
  return row;
}

/** Records the key in the caller's transaction; a concurrent call with the same key makes one
 *  of the two transactions fail with a unique violation (23505), so only one effect commits.
 *  An expired row of the same key (and a few other expired rows nobody else is deleting) is
 *  deleted first. */
export async function recordIdempotent(tx: TxSql, principal: string, key: string, call: IdempotentCall): Promise<void> {
  await tx`
    DELETE FROM api_idempotency_keys
    WHERE principal = ${principal} AND key = ${key} AND created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`;
  // Others' expired rows: skipped when another create is deleting them, so two tenants' creates
  // never wait on each other's transactions for housekeeping.
  await tx`
    DELETE FROM api_idempotency_keys WHERE (principal, key) IN (
      SELECT principal, key FROM api_idempotency_keys
      WHERE created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
      LIMIT ${CLEANUP_PER_RECORD} FOR UPDATE SKIP LOCKED)`;
  await tx`
    INSERT INTO api_idempotency_keys (principal, key, route, request_hash, target_id)
    VALUES (${principal}, ${key}, ${call.route}, ${call.requestHash}, ${call.targetId})`;
}
