// The engine's statements that carry many executions' requests at once (group-commit.ts):
// completed steps, starts and finishes. Each member keeps its own fence and its own answer, as
// the single-row statements of invocation-store.ts and journal-store.ts do; they are what
// these run per member. Members travel as one JSON document (jsonb_to_recordset): values are
// JSON already, so they are spliced in as they are rather than escaped and parsed twice. Each
// answers in ONE row (an aggregate): a member raising after others' rows were sent would leave
// postgres.js 3.4.9 counting those rows into the next query on the connection (its row index
// is reset on CommandComplete only), which then reads holes.
import type { Queryable } from '../../store/db';
import type { StoredFailure } from './errors';
import { json, startInput, type FinishResult, type StartArgs, type StartResult } from './invocation-store';
import type { PendingStart } from './lazy-start';

/** A completed journal position to record under its invocation's lease (group-commit.ts). */
export interface DoneWrite {
  invocationId: string;
  epoch: number;
  seq: number;
  kind: string;
  name: string;
  /** Encoded value (codec.encode), or null with a failure. */
  value: string | null;
  failure: StoredFailure | null;
  /** A lazy start (lazy-start.ts) this write carries while it is not written. */
  start?: PendingStart | null;
}

/** Records finished steps of any number of invocations in one statement, each fenced on its own
 *  lease epoch as journalDone is; answers, in order, which were inserted (false: the lease is
 *  gone or the position taken). Two members may name one position (a stale execution's write
 *  beside the new owner's): only the fenced member's insert answers true. */
export async function journalDoneMany(sql: Queryable, entries: readonly DoneWrite[]): Promise<boolean[]> {
  let doc = '[';
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    doc += `${i ? ',' : ''}{"n":${i},"i":${JSON.stringify(e.invocationId)},"e":${e.epoch | 0},"s":${e.seq | 0},"k":${JSON.stringify(e.kind)},"m":${JSON.stringify(e.name)},"v":${e.value ?? 'null'},"f":${json(e.failure) ?? 'null'}}`;
  }
  doc += ']';
  const [row] = await sql<{ ns: number[] }[]>`
    WITH b AS (SELECT * FROM jsonb_to_recordset(${doc}::text::jsonb) AS b(n int, i text, e int, s int, k text, m text, v jsonb, f jsonb)),
    fenced AS (SELECT b.* FROM b JOIN engine_invocations inv ON inv.id = b.i AND inv.lease_epoch = b.e AND inv.status = 'running'
               FOR KEY SHARE OF inv),
    ins AS (INSERT INTO engine_journal (invocation_id, seq, kind, name, status, value, failure, completed_at)
            SELECT i, s, k, m, 'done', nullif(v, 'null'), nullif(f, 'null'), now() FROM fenced
            ON CONFLICT (invocation_id, seq) DO NOTHING
            RETURNING invocation_id, seq)
    SELECT coalesce(array_agg(fenced.n), '{}') AS ns FROM fenced JOIN ins ON ins.invocation_id = fenced.i AND ins.seq = fenced.s`;
  const written = entries.map(() => false);
  for (const n of row!.ns) written[n] = true;
  return written;
}

/** Starts many untraced invocations in one statement (group-commit.ts); answers in order.
 *  Exclusive starts lock their key's row, so members are started in key order, the same in
 *  every batch of every process (no two batches wait on each other's keys); the sort is
 *  stable, so starts on one key keep their arrival order. A member that raises (a parent's
 *  lost lease, UE001) fails the statement, and the batch is sent again one start at a time. */
export async function startMany(sql: Queryable, starts: readonly StartArgs[]): Promise<StartResult[]> {
  const order = starts.map((_, i) => i).sort((a, b) => lockOrder(starts[a]!, starts[b]!));
  let doc = '[';
  for (let k = 0; k < order.length; k++) {
    const n = order[k]!;
    const a = starts[n]!;
    const p = a.parent;
    doc += `${k ? ',' : ''}{"n":${n},"id":${q(a.id)},"service":${q(a.service)},"handler":${q(a.handler)},"key":${q(a.key)},"kind":${q(a.kind)},"input":${startInput(a)},"idem":${q(a.idempotencyKey)},"delay":${num(a.delayMs)},"worker":${q(a.worker)},"lease":${a.leaseMs | 0},"parent":${q(p?.id ?? null)},"pepoch":${num(p?.epoch ?? null)},"pseq":${num(p?.seq ?? null)},"pentry":${q(p?.entry ?? null)},"pname":${q(p?.name ?? null)}}`;
  }
  doc += ']';
  // A function scan yields the document's rows in order, and each engine_start runs as its row
  // is produced: the order above is the order the keys are locked in.
  const [row] = await sql<{ rs: { n: number; r: StartResult }[] }[]>`
    SELECT jsonb_agg(jsonb_build_object('n', x.n, 'r',
             engine_start(x.id, x.service, x.handler, x.key, x.kind, coalesce(x.input, 'null'::jsonb), x.idem, x.delay, x.worker, x.lease,
                          x.parent, x.pepoch, x.pseq, x.pentry, x.pname))) AS rs
      FROM jsonb_to_recordset(${doc}::text::jsonb) AS x(n int, id text, service text, handler text, key text, kind text, input jsonb, idem text,
                                                       delay int, worker text, lease int, parent text, pepoch int, pseq int, pentry text, pname text)`;
  return inOrder(starts.length, row!.rs);
}

/** Exclusive starts first, by service, key and idempotency key: the order a batch locks key
 *  rows (and waits on another batch's new row with the same idempotency key) in. */
function lockOrder(a: StartArgs, b: StartArgs): number {
  const ea = a.kind === 'exclusive' ? 0 : 1;
  const eb = b.kind === 'exclusive' ? 0 : 1;
  if (ea !== eb) return ea - eb;
  if (a.service !== b.service) return a.service < b.service ? -1 : 1;
  const ka = a.key ?? '';
  const kb = b.key ?? '';
  if (ka !== kb) return ka < kb ? -1 : 1;
  const ia = a.idempotencyKey ?? '';
  const ib = b.idempotencyKey ?? '';
  return ia === ib ? 0 : ia < ib ? -1 : 1;
}

/** Answers back in the members' order. */
function inOrder<R>(length: number, rs: readonly { n: number; r: R }[]): R[] {
  const out = new Array<R>(length);
  for (const { n, r } of rs) out[n] = r;
  return out;
}

const q = (v: string | null): string => (v === null ? 'null' : JSON.stringify(v));
const num = (v: number | null): string => (v === null ? 'null' : String(v | 0));

/** What finishInvocation takes, for finishMany. */
export interface FinishArgs {
  id: string;
  epoch: number;
  status: 'completed' | 'failed' | 'cancelled';
  result: string | null;
  error: StoredFailure | null;
  worker: string | null;
  leaseMs: number;
  /** A lazy start (lazy-start.ts) this finish carries while it is not written. */
  start?: PendingStart | null;
}

/** Finishes many invocations in one statement (group-commit.ts); answers in order.
 *  Two concurrent batches meet at key rows and at calling parents' rows. Key rows: an
 *  exclusive member locks its key FOR UPDATE before it hands the key on, and a start batch
 *  running beside this one locks keys too (its INSERT … ON CONFLICT), in key order; so the
 *  statement first locks every exclusive member's key, in that same order (keysFirst), before
 *  any member runs. Parents' rows: each member then locks its own row, its parent's and its
 *  key's next invocation, of which only a parent can be shared with another finish batch, so
 *  the members go in their parents' order, the same in every batch (the subquery's order is
 *  the order the aggregate calls engine_finish in). A start takes its parent FOR KEY SHARE,
 *  which a finish's update of the parent does not conflict with. */
export async function finishMany(sql: Queryable, finishes: readonly FinishArgs[]): Promise<FinishResult[]> {
  let doc = '[';
  for (let n = 0; n < finishes.length; n++) {
    const f = finishes[n]!;
    doc += `${n ? ',' : ''}{"n":${n},"id":${q(f.id)},"epoch":${f.epoch | 0},"status":${q(f.status)},"result":${f.result ?? 'null'},"error":${json(f.error) ?? 'null'},"worker":${q(f.worker)},"lease":${f.leaseMs | 0}}`;
  }
  doc += ']';
  // keysFirst is an uncorrelated subquery: PostgreSQL runs it once (an InitPlan) before the
  // first row reaches the aggregate, so every key is held before any engine_finish runs.
  // COLLATE "C" orders by code point, as lockOrder's string comparison does (they differ
  // only for characters beyond U+FFFF against U+E000-U+FFFF, where a cycle is still broken by
  // 40P01 and the members sent one by one).
  const [row] = await sql<{ rs: { n: number; r: FinishResult }[] }[]>`
    SELECT jsonb_agg(jsonb_build_object('n', x.n, 'r', engine_finish(x.id, x.epoch, x.status, x.result, x.error, x.worker, x.lease))) AS rs
      FROM (SELECT x.* FROM jsonb_to_recordset(${doc}::text::jsonb) AS x(n int, id text, epoch int, status text, result jsonb, error jsonb, worker text, lease int)
                       LEFT JOIN engine_invocations i ON i.id = x.id
             WHERE (SELECT count(*) FROM (
                      SELECT 1 FROM engine_object_keys k JOIN engine_invocations e ON e.service = k.service AND e.object_key = k.object_key
                       WHERE e.id = ANY(${finishes.map((f) => f.id)}::text[]) AND e.kind = 'exclusive'
                       ORDER BY k.service COLLATE "C", k.object_key COLLATE "C" FOR UPDATE OF k) AS keys_first) >= 0
             ORDER BY i.parent_id NULLS LAST, x.id) AS x`;
  return inOrder(finishes.length, row!.rs);
}

/** A lazy start and its first journal entry in one statement (lazy-start.ts). The row is new
 *  and claimed for its worker at epoch 1 by this very statement, so the entry needs no fence;
 *  the CTE runs engine_start first, as the INSERT reads its answer. Raises what engine_start
 *  raises; true once both are written. */
export async function startAndJournal(sql: Queryable, a: StartArgs, e: DoneWrite): Promise<boolean> {
  const rows = await sql`
    WITH s AS (
      SELECT engine_start(${a.id}, ${a.service}, ${a.handler}, ${a.key}, ${a.kind}, ${startInput(a)}::text::jsonb,
        NULL, NULL, ${a.worker}, ${a.leaseMs}::int, NULL, NULL, NULL, NULL, NULL) AS r)
    INSERT INTO engine_journal (invocation_id, seq, kind, name, status, value, failure, completed_at)
    SELECT ${e.invocationId}, ${e.seq}::int, ${e.kind}, ${e.name}, 'done', ${e.value}::text::jsonb, ${json(e.failure)}::text::jsonb, now()
      FROM s WHERE s.r->>'status' = 'running' AND (s.r->>'epoch')::int = ${e.epoch}::int
    RETURNING seq`;
  return rows.length === 1;
}

/** A lazy start and its finish in one statement: a handler that returned before any durable
 *  write. engine_finish reads the row engine_start wrote (each statement of a function sees
 *  the ones before it in its transaction). The engine_start call is spelled out as in
 *  startAndJournal, not shared as a nested sql`` fragment: building one is a call of the pool,
 *  which the bench's and the tests' statement counts take for a statement sent. */
export async function startAndFinish(sql: Queryable, a: StartArgs, f: FinishArgs): Promise<FinishResult> {
  const [row] = await sql<{ r: FinishResult }[]>`
    WITH s AS (
      SELECT engine_start(${a.id}, ${a.service}, ${a.handler}, ${a.key}, ${a.kind}, ${startInput(a)}::text::jsonb,
        NULL, NULL, ${a.worker}, ${a.leaseMs}::int, NULL, NULL, NULL, NULL, NULL) AS r)
    SELECT engine_finish(${f.id}, ${f.epoch}::int, ${f.status}, ${f.result}::text::jsonb, ${json(f.error)}::text::jsonb, ${f.worker}, ${f.leaseMs}::int) AS r
      FROM s`;
  return row!.r;
}
