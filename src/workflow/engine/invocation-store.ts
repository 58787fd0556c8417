// The engine's SQL. Multi-row operations are the plpgsql functions of sql/0002_engine.sql (one
// round trip each); single-row journal writes are fenced statements that only succeed while
// the caller still holds the invocation's lease epoch (FOR KEY SHARE, so a claim by another
// process waits for the write or skips the row, and the stale writer then finds no row).
import type { Queryable, Sql } from '../../store/db';
import type { StoredFailure } from './errors';
import type { ExecutionTarget, HandlerKind } from './types';

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

/** What a claimed row runs as: its lease epoch is the claim's. */
export function targetOf(row: InvocationRow): ExecutionTarget {
  return {
    id: row.id,
    service: row.service,
    handler: row.handler,
    key: row.objectKey,
    kind: row.kind,
    input: row.input,
    epoch: row.leaseEpoch,
    cancelRequested: row.cancelRequested,
  };
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

export const json = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));

/** A start's input as the statement sends it: serialized at the call when it was (a lazy start
 *  writes its row a step later, and the caller may change the object meanwhile). */
export const startInput = (a: StartArgs): string => (a.inputJson !== undefined ? a.inputJson : json(a.input)) ?? 'null';

export interface StartArgs {
  id: string;
  service: string;
  handler: string;
  key: string | null;
  kind: HandlerKind;
  input: unknown;
  /** `input` serialized already (json()), sent instead of serializing it again. */
  inputJson?: string | null;
  idempotencyKey: string | null;
  delayMs: number | null;
  /** Claim for this worker when runnable now (it runs in process at once). */
  worker: string | null;
  leaseMs: number;
  parent?: { id: string; epoch: number; seq: number; entry: 'call' | 'send'; name: string };
  /** Opaque trace carrier (TraceHooks), stored with a new invocation; null: none (tracing off). */
  traceContext?: string | null;
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
  if (a.traceContext) return startTraced(sql, a, a.traceContext);
  const [row] = await sql<{ r: StartResult }[]>`
    SELECT engine_start(${a.id}, ${a.service}, ${a.handler}, ${a.key}, ${a.kind}, ${startInput(a)}::text::jsonb,
      ${a.idempotencyKey}, ${a.delayMs}::int, ${a.worker}, ${a.leaseMs}::int,
      ${p?.id ?? null}, ${p?.epoch ?? null}::int, ${p?.seq ?? null}::int, ${p?.entry ?? null}, ${p?.name ?? null}) AS r`;
  return row!.r;
}

/** startInvocation plus its trace carrier in one statement (sql/0007_tracing.sql): a new
 *  invocation is never visible to a claim without it. A deduplicated start keeps the first's. */
async function startTraced(sql: Queryable, a: StartArgs, carrier: string): Promise<StartResult> {
  const p = a.parent;
  const [row] = await sql<{ r: StartResult }[]>`
    WITH s AS (
      SELECT engine_start(${a.id}, ${a.service}, ${a.handler}, ${a.key}, ${a.kind}, ${startInput(a)}::text::jsonb,
        ${a.idempotencyKey}, ${a.delayMs}::int, ${a.worker}, ${a.leaseMs}::int,
        ${p?.id ?? null}, ${p?.epoch ?? null}::int, ${p?.seq ?? null}::int, ${p?.entry ?? null}, ${p?.name ?? null}) AS r),
    t AS (
      INSERT INTO engine_trace_contexts (invocation_id, carrier)
      SELECT ${a.id}, ${carrier} FROM s WHERE (s.r->>'deduped')::boolean IS NOT TRUE
      ON CONFLICT (invocation_id) DO NOTHING)
    SELECT r FROM s`;
  return row!.r;
}

/** The trace carrier stored with an invocation (null: none). */
export async function traceContextOf(sql: Queryable, id: string): Promise<string | null> {
  const [row] = await sql<{ carrier: string }[]>`SELECT carrier FROM engine_trace_contexts WHERE invocation_id = ${id}`;
  return row?.carrier ?? null;
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

/** Extends the leases this worker holds; returns the ids still held. A row another statement
 *  has locked (its finish, its suspension) is not waited for: it is still held if it is still
 *  running under the epoch, and its own statement moves it on. Waiting would let a renewal
 *  that locks many rows and a batch of finishes that locks many rows wait on each other in
 *  opposite orders until the deadlock detector ends one a second later.
 *  Held means the epoch it was claimed with, whatever the status: only a claim or a hand-back
 *  moves the epoch. A finish of ours that committed before this snapshot has moved the row out
 *  of `running` at the same epoch, and its own answer settles the execution; read as lost, it
 *  detached the finishing execution, whose answer then never started the invocation the
 *  finish had handed its key to and claimed here: every caller on that key waited a lease. */
export async function renewLeases(sql: Queryable, ids: string[], epochs: number[], leaseMs: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await sql<{ id: string }[]>`
    WITH l AS (SELECT * FROM unnest(${ids}::text[], ${epochs}::int[]) AS l(id, epoch)),
    held AS (SELECT i.id FROM engine_invocations i JOIN l ON i.id = l.id AND i.lease_epoch = l.epoch),
    locked AS (
      SELECT i.id FROM engine_invocations i JOIN l ON i.id = l.id AND i.lease_epoch = l.epoch AND i.status = 'running'
         FOR NO KEY UPDATE OF i SKIP LOCKED),
    renewed AS (
      UPDATE engine_invocations i SET due_at = now() + make_interval(secs => ${leaseMs}::int / 1000.0)
        FROM locked WHERE i.id = locked.id)
    SELECT id FROM held`;
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
  /** Object keys in this set only (empty: none). Applied before the limit, so a caller that may
   *  see some objects gets a full page of theirs, whatever other objects' invocations are newer. */
  keys?: readonly string[];
  limit?: number;
}

export async function listInvocationRows(sql: Queryable, f: ListFilter): Promise<InvocationRow[]> {
  const limit = Math.min(Math.max(f.limit ?? 100, 1), 1000);
  return sql<InvocationRow[]>`
    SELECT * FROM engine_invocations
     WHERE (${f.status ?? null}::text IS NULL OR status = ${f.status ?? null})
       AND (${f.target ?? null}::text IS NULL OR service = ${f.target ?? null})
       AND (${f.key ?? null}::text IS NULL OR object_key = ${f.key ?? null})
       AND (${f.keys ? (f.keys as string[]) : null}::text[] IS NULL OR object_key = ANY(${f.keys ? (f.keys as string[]) : null}::text[]))
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
    j AS (DELETE FROM engine_journal WHERE invocation_id IN (SELECT id FROM gone)),
    t AS (DELETE FROM engine_trace_contexts WHERE invocation_id IN (SELECT id FROM gone))
    SELECT id FROM gone`;
  return rows.length;
}

export interface BacklogRow {
  status: InvocationStatus;
  count: number;
  /** Seconds the most overdue of them is past its due_at (a ready one's start, a running one's
   *  lease, a timer); 0 when none is late. */
  overdueSeconds: number;
}

/** Unfinished invocations by status, and how late each status's latest is: the engine's
 *  backlog metrics, one query per scrape (the status index narrows it to unfinished rows). */
export async function backlog(sql: Queryable): Promise<BacklogRow[]> {
  return sql<BacklogRow[]>`
    SELECT status, count(*)::int AS count,
           coalesce(max(extract(epoch FROM now() - due_at)) FILTER (WHERE due_at < now()), 0)::float8 AS overdue_seconds
    FROM engine_invocations WHERE status IN ('scheduled', 'queued', 'ready', 'running', 'suspended') GROUP BY status`;
}
