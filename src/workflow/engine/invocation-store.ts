// The engine's SQL. Multi-row operations are the plpgsql functions of sql/0002_engine.sql (one
// round trip each); single-row journal writes are fenced statements that only succeed while
// the caller still holds the invocation's lease epoch (FOR KEY SHARE, so a claim by another
// process waits for the write or skips the row, and the stale writer then finds no row).
import type { Queryable, Sql, TxSql } from '../../store/db';
import type { StoredFailure } from './errors';
import type { HandlerKind } from './types';

export type InvocationStatus = 'scheduled' | 'queued' | 'ready' | 'running' | 'suspended' | 'completed' | 'failed' | 'cancelled';

export const TERMINAL_STATUSES: readonly InvocationStatus[] = ['completed', 'failed', 'cancelled'];

export interface InvocationRow {
  id: string;
  service: string;
  handler: string;
  objectKey: string | null;
  kind: HandlerKind;
  input: unknown;
  status: InvocationStatus;
  result: unknown;
  error: StoredFailure | null;
  idempotencyKey: string | null;
  parentId: string | null;
  parentSeq: number | null;
  dueAt: Date | null;
  leaseOwner: string | null;
  leaseEpoch: number;
  parkedBy: string | null;
  cancelRequested: boolean;
  attempts: number;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}

export interface JournalRow {
  seq: number;
  kind: string;
  name: string;
  status: 'pending' | 'done';
  value: unknown;
  failure: StoredFailure | null;
  wakeAt: Date | null;
  childId: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

/** A completed entry as the plpgsql functions report it. */
export interface DoneEntry {
  seq: number;
  value: unknown;
  failure: StoredFailure | null;
}

const json = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));

export interface StartArgs {
  id: string;
  service: string;
  handler: string;
  key: string | null;
  kind: HandlerKind;
  input: unknown;
  idempotencyKey: string | null;
  delayMs: number | null;
  /** Claim for this worker when runnable now (it runs in process at once). */
  worker: string | null;
  leaseMs: number;
  parent?: { id: string; epoch: number; seq: number; entry: 'call' | 'send'; name: string };
}

export interface StartResult {
  id: string;
  deduped: boolean;
  status: InvocationStatus;
  /** Lease epoch when claimed for the worker (status running). */
  epoch?: number;
  result?: unknown;
  error?: StoredFailure | null;
}

export async function startInvocation(sql: Queryable, a: StartArgs): Promise<StartResult> {
  const p = a.parent;
  const [row] = await sql<{ r: StartResult }[]>`
    SELECT engine_start(${a.id}, ${a.service}, ${a.handler}, ${a.key}, ${a.kind}, ${json(a.input) ?? 'null'}::text::jsonb,
      ${a.idempotencyKey}, ${a.delayMs}::int, ${a.worker}, ${a.leaseMs}::int,
      ${p?.id ?? null}, ${p?.epoch ?? null}::int, ${p?.seq ?? null}::int, ${p?.entry ?? null}, ${p?.name ?? null}) AS r`;
  return row!.r;
}

export interface WakeInfo {
  found?: boolean;
  accepted?: boolean;
  /** Set when the invocation was claimed for the calling worker (it had parked it). */
  claimedEpoch?: number;
  done?: DoneEntry[] | null;
}

export interface FinishResult {
  ok: boolean;
  parent?: (WakeInfo & { id: string }) | null;
  /** The next exclusive invocation of the key; with epoch when claimed for the worker. */
  next?: {
    id: string;
    epoch?: number;
    service?: string;
    handler?: string;
    key?: string;
    kind?: HandlerKind;
    input?: unknown;
    cancelRequested?: boolean;
  } | null;
}

export async function finishInvocation(
  sql: Queryable,
  id: string,
  epoch: number,
  status: 'completed' | 'failed' | 'cancelled',
  result: string | null,
  error: StoredFailure | null,
  worker: string | null,
  leaseMs: number,
): Promise<FinishResult> {
  const [row] = await sql<{ r: FinishResult }[]>`
    SELECT engine_finish(${id}, ${epoch}::int, ${status}, ${result}::text::jsonb, ${json(error)}::text::jsonb, ${worker}, ${leaseMs}::int) AS r`;
  return row!.r;
}

export interface SuspendResult {
  ok: boolean;
  suspended?: boolean;
  done?: DoneEntry[] | null;
  dueAt?: number | null;
  /** A cancellation was delivered: the calls it failed, whose invocations must be cancelled too. */
  cancelChildren?: string[] | null;
}

export async function suspendInvocation(
  sql: Queryable,
  id: string,
  epoch: number,
  awaited: number[],
  awakeables: number[],
  cancelFailure: StoredFailure,
): Promise<SuspendResult> {
  const [row] = await sql<{ r: SuspendResult }[]>`
    SELECT engine_suspend(${id}, ${epoch}::int, ${awaited}::int[], ${awakeables}::int[], ${json(cancelFailure)}::text::jsonb) AS r`;
  return row!.r;
}

export async function claimInvocations(
  sql: Queryable,
  worker: string,
  limit: number,
  leaseMs: number,
  only: string | null,
  stealAfterMs: number,
  services: string[],
): Promise<InvocationRow[]> {
  return sql<InvocationRow[]>`
    SELECT * FROM engine_claim(${worker}, ${limit}::int, ${leaseMs}::int, ${only}, ${stealAfterMs}::int, ${services}::text[])`;
}

export async function completeEntry(
  sql: Queryable,
  invocationId: string,
  seq: number,
  kind: 'awakeable' | 'call',
  value: string | null,
  failure: StoredFailure | null,
  worker: string | null,
  leaseMs: number,
): Promise<WakeInfo> {
  const [row] = await sql<{ r: WakeInfo }[]>`
    SELECT engine_complete_entry(${invocationId}, ${seq}::int, ${kind}, ${value}::text::jsonb, ${json(failure)}::text::jsonb, ${worker}, ${leaseMs}::int) AS r`;
  return row!.r;
}

export interface CancelResult {
  found: boolean;
  status?: InvocationStatus;
  wake?: WakeInfo | null;
}

export async function cancelInvocation(
  sql: Queryable,
  id: string,
  failure: StoredFailure,
  worker: string | null,
  leaseMs: number,
): Promise<CancelResult> {
  const [row] = await sql<{ r: CancelResult }[]>`
    SELECT engine_cancel(${id}, ${json(failure)}::text::jsonb, ${worker}, ${leaseMs}::int) AS r`;
  return row!.r;
}

/** Extends the leases this worker holds; returns the ids still held. */
export async function renewLeases(sql: Queryable, ids: string[], epochs: number[], leaseMs: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await sql<{ id: string }[]>`
    UPDATE engine_invocations i
       SET due_at = now() + make_interval(secs => ${leaseMs}::int / 1000.0)
      FROM unnest(${ids}::text[], ${epochs}::int[]) AS l(id, epoch)
     WHERE i.id = l.id AND i.lease_epoch = l.epoch AND i.status = 'running'
     RETURNING i.id`;
  return new Set(rows.map((r) => r.id));
}

/** Hands leases back on shutdown: the invocations become ready for any worker at once. */
export async function releaseLeases(sql: Queryable, ids: string[], epochs: number[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    UPDATE engine_invocations i
       SET status = 'ready', lease_owner = NULL, lease_epoch = i.lease_epoch + 1, due_at = now(), awaiting = NULL, updated_at = now()
      FROM unnest(${ids}::text[], ${epochs}::int[]) AS l(id, epoch)
     WHERE i.id = l.id AND i.lease_epoch = l.epoch AND i.status = 'running'`;
  await sql`SELECT pg_notify('unkey_engine', 'n')`;
}

/** Forgets this worker's parked hints, so wake-ups go to anyone at once. */
export async function unpark(sql: Queryable, worker: string): Promise<void> {
  await sql`UPDATE engine_invocations SET parked_by = NULL WHERE parked_by = ${worker} AND status IN ('suspended', 'ready')`;
}

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

export async function getInvocationRow(sql: Queryable, id: string): Promise<InvocationRow | undefined> {
  const [row] = await sql<InvocationRow[]>`SELECT * FROM engine_invocations WHERE id = ${id}`;
  return row;
}

export type OutcomeRow = Pick<InvocationRow, 'id' | 'status' | 'result' | 'error'>;

/** Status and outcome of invocations (missing ids are absent). */
export async function outcomeRows(sql: Queryable, ids: string[]): Promise<OutcomeRow[]> {
  if (ids.length === 0) return [];
  return sql<OutcomeRow[]>`
    SELECT id, status,
           CASE WHEN status IN ('completed', 'failed', 'cancelled') THEN result END AS result,
           CASE WHEN status IN ('completed', 'failed', 'cancelled') THEN error END AS error
      FROM engine_invocations WHERE id = ANY(${ids}::text[])`;
}

export interface ListFilter {
  status?: InvocationStatus;
  /** Service or object name. */
  target?: string;
  /** Object key (with target: one object's invocations). */
  key?: string;
  limit?: number;
}

export async function listInvocationRows(sql: Queryable, f: ListFilter): Promise<InvocationRow[]> {
  const limit = Math.min(Math.max(f.limit ?? 100, 1), 1000);
  return sql<InvocationRow[]>`
    SELECT * FROM engine_invocations
     WHERE (${f.status ?? null}::text IS NULL OR status = ${f.status ?? null})
       AND (${f.target ?? null}::text IS NULL OR service = ${f.target ?? null})
       AND (${f.key ?? null}::text IS NULL OR object_key = ${f.key ?? null})
     ORDER BY created_at DESC, id LIMIT ${limit}`;
}

/** Earliest time anything becomes claimable, to arm the local timer precisely. */
export async function nextDueAt(sql: Sql): Promise<number | null> {
  const [row] = await sql<{ at: number | null }[]>`
    SELECT (extract(epoch FROM min(due_at)) * 1000)::float8 AS at FROM engine_invocations WHERE due_at IS NOT NULL`;
  return row?.at ?? null;
}

/** Deletes finished invocations (and their journals) that ended before the cutoff, oldest
 *  first, at most `limit` per call so one sweep never holds locks for long. */
export async function purgeFinished(sql: Queryable, olderThanMs: number, limit: number): Promise<number> {
  const rows = await sql<{ id: string }[]>`
    WITH gone AS (
      DELETE FROM engine_invocations WHERE id IN (
        SELECT id FROM engine_invocations
         WHERE status IN ('completed', 'failed', 'cancelled')
           AND completed_at < now() - make_interval(secs => ${olderThanMs}::float8 / 1000)
         ORDER BY completed_at LIMIT ${limit}::int)
      RETURNING id),
    j AS (DELETE FROM engine_journal WHERE invocation_id IN (SELECT id FROM gone))
    SELECT id FROM gone`;
  return rows.length;
}
