// The journal's SQL: one row per position of an invocation (steps, sleeps, state reads and
// writes, calls), and the object state that state writes change in the same statement. Every
// write is fenced on the caller's lease epoch (FOR KEY SHARE): a process that lost the lease
// records nothing. Invocation rows themselves are invocation-store.ts.
import type { Queryable, TxSql } from '../../store/db';
import type { StoredFailure } from './errors';
import { json, type DoneEntry, type JournalRow, type OutcomeRow } from './invocation-store';

export async function loadJournal(sql: Queryable, invocationId: string): Promise<JournalRow[]> {
  return sql<JournalRow[]>`
    SELECT seq, kind, name, status, value, failure, wake_at, child_id, created_at, completed_at
      FROM engine_journal WHERE invocation_id = ${invocationId} ORDER BY seq`;
}

export async function doneEntries(sql: Queryable, invocationId: string): Promise<DoneEntry[]> {
  return sql<DoneEntry[]>`
    SELECT seq, value, failure FROM engine_journal
     WHERE invocation_id = ${invocationId} AND status = 'done' AND kind IN ('awakeable', 'sleep', 'call')`;
}

/** Records a finished step under the lease. False when the lease is gone. */
export async function journalDone(
  sql: Queryable,
  invocationId: string,
  epoch: number,
  seq: number,
  kind: string,
  name: string,
  value: string | null,
  failure: StoredFailure | null,
): Promise<boolean> {
  const rows = await sql`
    WITH f AS (SELECT 1 FROM engine_invocations WHERE id = ${invocationId} AND lease_epoch = ${epoch}::int AND status = 'running' FOR KEY SHARE)
    INSERT INTO engine_journal (invocation_id, seq, kind, name, status, value, failure, completed_at)
    SELECT ${invocationId}, ${seq}::int, ${kind}, ${name}, 'done', ${value}::text::jsonb, ${json(failure)}::text::jsonb, now() FROM f
    ON CONFLICT (invocation_id, seq) DO NOTHING
    RETURNING seq`;
  return rows.length === 1;
}

/** The entry at a position, if it is there with this kind and name and the caller still holds
 *  the lease: a retried write whose first answer was lost recognises its own entry this way. */
export async function ownEntry(
  sql: Queryable,
  invocationId: string,
  epoch: number,
  seq: number,
  kind: string,
  name: string,
): Promise<{ value: unknown } | null> {
  const [row] = await sql<{ value: unknown }[]>`
    SELECT j.value FROM engine_journal j JOIN engine_invocations i ON i.id = j.invocation_id
     WHERE j.invocation_id = ${invocationId} AND j.seq = ${seq}::int AND j.kind = ${kind} AND j.name = ${name}
       AND i.lease_epoch = ${epoch}::int AND i.status = 'running'`;
  return row ?? null;
}

/** The invocation a parent's call or send at `seq` started, if that start committed. */
export async function childAt(sql: Queryable, parentId: string, seq: number): Promise<OutcomeRow | null> {
  const [row] = await sql<OutcomeRow[]>`
    SELECT c.id, c.status,
           CASE WHEN c.status IN ('completed', 'failed', 'cancelled') THEN c.result END AS result,
           CASE WHEN c.status IN ('completed', 'failed', 'cancelled') THEN c.error END AS error
      FROM engine_journal j JOIN engine_invocations c ON c.id = j.child_id
     WHERE j.invocation_id = ${parentId} AND j.seq = ${seq}::int`;
  return row ?? null;
}

/** Inside a database step's transaction: holds the lease for the transaction's duration. */
export async function fenceInTx(tx: TxSql, invocationId: string, epoch: number): Promise<boolean> {
  const rows = await tx`
    SELECT 1 FROM engine_invocations WHERE id = ${invocationId} AND lease_epoch = ${epoch}::int AND status = 'running' FOR KEY SHARE`;
  return rows.length === 1;
}

export async function journalSleep(
  sql: Queryable,
  invocationId: string,
  epoch: number,
  seq: number,
  name: string,
  ms: number,
): Promise<boolean> {
  // The database clock decides when timers are due (claims compare with now()), so the wake
  // time is taken from it too: a skewed ctrl clock cannot move a timer.
  const rows = await sql`
    WITH f AS (SELECT 1 FROM engine_invocations WHERE id = ${invocationId} AND lease_epoch = ${epoch}::int AND status = 'running' FOR KEY SHARE)
    INSERT INTO engine_journal (invocation_id, seq, kind, name, status, wake_at)
    SELECT ${invocationId}, ${seq}::int, 'sleep', ${name}, 'pending', now() + make_interval(secs => ${ms}::float8 / 1000) FROM f
    ON CONFLICT (invocation_id, seq) DO NOTHING
    RETURNING seq`;
  return rows.length === 1;
}

/** Reads an object state value and journals what was read, so replays see the same value. */
export async function journalStateGet(
  sql: Queryable,
  invocationId: string,
  epoch: number,
  seq: number,
  service: string,
  key: string,
  name: string,
): Promise<{ ok: boolean; value: unknown }> {
  const rows = await sql<{ value: unknown }[]>`
    WITH f AS (SELECT 1 FROM engine_invocations WHERE id = ${invocationId} AND lease_epoch = ${epoch}::int AND status = 'running' FOR KEY SHARE)
    INSERT INTO engine_journal (invocation_id, seq, kind, name, status, value, completed_at)
    SELECT ${invocationId}, ${seq}::int, 'get', ${name}, 'done',
           coalesce((SELECT jsonb_build_object('v', value) FROM engine_state WHERE service = ${service} AND object_key = ${key} AND name = ${name}), '{}'),
           now()
      FROM f
    ON CONFLICT (invocation_id, seq) DO NOTHING
    RETURNING value`;
  return rows.length === 1 ? { ok: true, value: rows[0]!.value } : { ok: false, value: undefined };
}

/** Writes (value given) or clears (null) an object state value together with its journal entry. */
export async function journalStateWrite(
  sql: Queryable,
  invocationId: string,
  epoch: number,
  seq: number,
  service: string,
  key: string,
  name: string,
  value: string | null,
): Promise<boolean> {
  const kind = value === null ? 'clear' : 'set';
  const rows = await sql`
    WITH f AS (SELECT 1 FROM engine_invocations WHERE id = ${invocationId} AND lease_epoch = ${epoch}::int AND status = 'running' FOR KEY SHARE),
    d AS (DELETE FROM engine_state WHERE ${value}::text::jsonb IS NULL AND service = ${service} AND object_key = ${key} AND name = ${name}
          AND EXISTS (SELECT 1 FROM f)),
    u AS (INSERT INTO engine_state (service, object_key, name, value)
          SELECT ${service}, ${key}, ${name}, ${value}::text::jsonb FROM f WHERE ${value}::text::jsonb IS NOT NULL
          ON CONFLICT (service, object_key, name) DO UPDATE SET value = EXCLUDED.value, updated_at = now())
    INSERT INTO engine_journal (invocation_id, seq, kind, name, status, completed_at)
    SELECT ${invocationId}, ${seq}::int, ${kind}, ${name}, 'done', now() FROM f
    ON CONFLICT (invocation_id, seq) DO NOTHING
    RETURNING seq`;
  return rows.length === 1;
}

/** Object state as it is now (operator and test reads; handlers read through the journal). */
export async function readState(sql: Queryable, service: string, key: string): Promise<Record<string, unknown>> {
  const rows = await sql<{ name: string; value: unknown }[]>`
    SELECT name, value FROM engine_state WHERE service = ${service} AND object_key = ${key} ORDER BY name`;
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}

