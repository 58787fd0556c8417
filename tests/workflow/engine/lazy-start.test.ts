// A lazy start (src/workflow/engine/lazy-start.ts): engine.call of a service handler here, with
// no idempotency key, runs at once and writes its row with its first durable write. A lone
// n-step call is then n + 1 statements; the row appears with the first entry, already claimed
// at epoch 1; what needs the row first (a database step, a child call, an id handed out) gets
// it first; a lost answer of the statement carrying the start is recognised; a lease renewal
// does not take the missing row for a lost lease, even when a carrier commits while it runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import type { Sql } from '../../../src/store/db';
import { handler } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';

const db = await testDb();
await db.sql`CREATE TABLE fx_lazy (id text PRIMARY KEY)`;

const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
/** Statements sent, by what they contain; the next one containing `loseNext` has its answer
 *  lost after it committed. The next one containing `lateNext` fails at once as if cut, but
 *  reaches the database later: it commits right after the next read of an invocation row has
 *  read nothing (a retry looking for the row while the original was still running). */
const seen: string[] = [];
let loseNext: string | null = null;
let lateNext: string | null = null;
let late: (() => Promise<unknown>) | null = null;
/** When set, the next read of an invocation row waits for it first. */
let readGate: Promise<void> | null = null;
/** Invocations named by a lease renewal. */
const renewedIds = new Set<string>();
/** The next statement containing `failNext` fails at once as if cut, never reaching the
 *  database; `failedId` is the invocation it was for. */
let failNext: string | null = null;
let failedId: string | null = null;
/** The next renewal naming `failedId` runs at once, calls `ran` with its rows back, and answers
 *  once `until` settled. */
let slowRenewal: { ran: () => void; until: Promise<unknown> } | null = null;
/** `done` is called once the next statement containing `text` for `failedId` answered. */
let answered: { text: string; done: () => void } | null = null;
const counted = new Proxy(db.sql, {
  apply(target, thisArg, args: unknown[]) {
    const text = Array.isArray(args[0]) ? (args[0] as string[]).join('$') : '';
    seen.push(text);
    const run = () => Promise.resolve(Reflect.apply(target as unknown as (...a: unknown[]) => unknown, thisArg, args));
    if (text.includes('renewed AS')) for (const id of args[1] as string[]) renewedIds.add(id);
    if (failNext !== null && text.includes(failNext)) {
      failNext = null;
      failedId = args[1] as string;
      return Promise.reject(reset());
    }
    if (slowRenewal && text.includes('renewed AS') && (args[1] as string[]).includes(failedId!)) {
      const s = slowRenewal;
      slowRenewal = null;
      return run().then(async (rows) => (s.ran(), await s.until, rows));
    }
    if (answered && text.includes(answered.text) && args[1] === failedId) {
      const a = answered;
      answered = null;
      return run().then((rows) => (a.done(), rows));
    }
    if (readGate && text.startsWith('SELECT * FROM engine_invocations WHERE id')) {
      const gate = readGate;
      readGate = null;
      return gate.then(run);
    }
    if (late && text.startsWith('SELECT * FROM engine_invocations WHERE id')) {
      const send = late;
      late = null;
      return run().then(async (rows) => (await send(), rows));
    }
    if (lateNext !== null && text.includes(lateNext)) {
      lateNext = null;
      late = run;
      return Promise.reject(reset());
    }
    const q = run();
    if (loseNext === null || !text.includes(loseNext)) return q;
    loseNext = null;
    return q.then(() => {
      throw reset();
    });
  },
}) as Sql;

const engine = testEngine(counted, { workerId: 'lazy', leaseMs: 600 });
let release: (() => void) | null = null;
const held = () => new Promise<void>((r) => (release = r));
let releaseSecond: (() => void) | null = null;
const ran = new Map<string, number>();
const count = (k: string) => ran.set(k, (ran.get(k) ?? 0) + 1);

const Child = engine.service('lazyChild', {
  steps: handler({ input: z.object({ n: z.number(), tag: z.string() }), output: z.number() }, async (ctx, { n }) => {
    let acc = 0;
    for (let i = 0; i < n; i++) acc = await ctx.run(`s${i}`, () => acc + 1);
    return acc;
  }),
});
const Lazy = engine.service('lazy', {
  steps: handler({ input: z.object({ n: z.number(), tag: z.string() }), output: z.number() }, async (ctx, { n, tag }) => {
    let acc = 0;
    for (let i = 0; i < n; i++) acc = await ctx.run(`s${i}`, () => (count(`${tag}:${i}`), acc + 1));
    return acc;
  }),
  heldFirst: handler({ input: z.object({}), output: z.number() }, async (ctx) => {
    const v = await ctx.run('first', async () => {
      await held();
      return 1;
    });
    return v + (await ctx.run('second', () => 1));
  }),
  heldSecond: handler({ input: z.object({}), output: z.number() }, async (ctx) => {
    const v = await ctx.run('first', () => 1);
    return v + (await ctx.run('second', () => new Promise<number>((r) => (releaseSecond = () => r(1)))));
  }),
  idFirst: handler({ input: z.object({}), output: z.number() }, async (ctx) => {
    const id = ctx.invocationId;
    return ctx.run('look', async () => (await db.sql`SELECT 1 FROM engine_invocations WHERE id = ${id}`).length);
  }),
  txFirst: handler({ input: z.object({ id: z.string() }), output: z.number() }, async (ctx, { id }) => {
    await ctx.runTx('insert', async (tx) => {
      count(`tx:${id}`);
      await tx`INSERT INTO fx_lazy (id) VALUES (${id})`;
    });
    return 1;
  }),
  both: handler({ input: z.object({ tag: z.string().optional() }), output: z.number() }, async (ctx) => {
    const [a, b] = await ctx.all([ctx.run('a', () => 1), ctx.run('b', () => 2)]);
    return a + b;
  }),
  parent: handler({ input: z.object({}), output: z.number() }, async (ctx): Promise<number> => ctx.call(Child, 'steps', { n: 1, tag: 'child' })),
});
await engine.start();

/** The engine's writes among the statements seen (claims, polls and renewals run beside them). */
const writes = () => seen.filter((s) => s.includes('engine_journal') || s.includes('engine_start') || s.includes('engine_finish'));

test('a lone call of n steps is n + 1 statements, and one of no step is one', async () => {
  seen.length = 0;
  assert.equal(await engine.call(Lazy, 'steps', { n: 3, tag: 'count' }), 3);
  assert.equal(writes().length, 4);
  seen.length = 0;
  assert.equal(await engine.call(Lazy, 'steps', { n: 0, tag: 'zero' }), 0);
  assert.equal(writes().length, 1, seen.join('\n'));
  const rows = await db.sql<{ status: string }[]>`SELECT status FROM engine_invocations WHERE service = 'lazy' AND input->>'tag' = 'zero'`;
  assert.deepEqual(rows.map((r) => r.status), ['completed']);
});

test('the row appears with the first entry, claimed at epoch 1, and a renewal meanwhile does not drop the execution', async () => {
  const renewals = () => seen.filter((s) => s.includes('renewed AS')).length;
  // A written execution held in its second step, so renewals are sent while the lazy one waits.
  const other = engine.call(Lazy, 'heldSecond', {});
  await waitFor(() => releaseSecond !== null);
  const done = engine.call(Lazy, 'heldFirst', {});
  await waitFor(() => release !== null);
  assert.equal((await db.sql`SELECT 1 FROM engine_invocations WHERE handler = 'heldFirst'`).length, 0, 'no row before the first write');
  const before = renewals();
  await waitFor(() => renewals() > before);
  release!();
  releaseSecond!();
  assert.equal(await done, 2);
  assert.equal(await other, 2);
  const rows = await db.sql<{ status: string; leaseEpoch: number }[]>`SELECT status, lease_epoch FROM engine_invocations WHERE handler = 'heldFirst'`;
  assert.deepEqual(rows.map((r) => [r.status, r.leaseEpoch]), [['completed', 1]]);
});

test('a handler that read its id finds its row from its next step on', async () => {
  assert.equal(await engine.call(Lazy, 'idFirst', {}), 1);
});

test('a database step first: its transaction finds the row, and its write happens once', async () => {
  assert.equal(await engine.call(Lazy, 'txFirst', { id: 'tx1' }), 1);
  assert.equal(ran.get('tx:tx1'), 1);
  assert.equal((await db.sql`SELECT 1 FROM fx_lazy WHERE id = 'tx1'`).length, 1);
});

test('two steps at once as the first writes: one start, both entries', async () => {
  assert.equal(await engine.call(Lazy, 'both', { tag: 'both-once' }), 3);
  const rows = await db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM engine_journal j JOIN engine_invocations i ON i.id = j.invocation_id WHERE i.input->>'tag' = 'both-once'`;
  assert.equal(rows[0]!.n, 2);
});

test('a child call first: the parent row is written before the child start fences on it', async () => {
  assert.equal(await engine.call(Lazy, 'parent', {}), 1);
});

test('the answer of the statement carrying the start is lost after it committed: the step ran once and the call answers', async () => {
  loseNext = 'WITH s AS';
  assert.equal(await engine.call(Lazy, 'steps', { n: 2, tag: 'lost-step' }), 2);
  assert.equal(loseNext, null, 'an answer was lost');
  assert.deepEqual([ran.get('lost-step:0'), ran.get('lost-step:1')], [1, 1]);
  loseNext = 'WITH s AS';
  assert.equal(await engine.call(Lazy, 'steps', { n: 0, tag: 'lost-finish' }), 0);
  assert.equal(loseNext, null, 'an answer was lost');
  const rows = await db.sql<{ status: string }[]>`SELECT status FROM engine_invocations WHERE input->>'tag' IN ('lost-step', 'lost-finish')`;
  assert.deepEqual(rows.map((r) => r.status), ['completed', 'completed']);
});

test('two steps at once as the first writes, and the answer of the one carrying the start is lost: the other does not start it again', async () => {
  loseNext = 'WITH s AS';
  assert.equal(await engine.call(Lazy, 'both', { tag: 'both-lost' }), 3);
  assert.equal(loseNext, null, 'an answer was lost');
  const rows = await db.sql<{ n: number; status: string }[]>`
    SELECT count(j.seq)::int AS n, i.status FROM engine_invocations i LEFT JOIN engine_journal j ON j.invocation_id = i.id
     WHERE i.input->>'tag' = 'both-lost' GROUP BY i.id, i.status`;
  assert.deepEqual(rows.map((r) => [r.n, r.status]), [[2, 'completed']]);
});

test('the retry looked for the row while the statement carrying the start was still running: the start is not an error, and the step ran once', async () => {
  lateNext = 'WITH s AS';
  assert.equal(await engine.call(Lazy, 'steps', { n: 2, tag: 'late-step' }), 2);
  assert.equal(lateNext, null, 'a statement was late');
  assert.equal(late, null, 'the late statement was sent');
  assert.deepEqual([ran.get('late-step:0'), ran.get('late-step:1')], [1, 1]);
  // Epoch 1: finished by its first run, not by a replay after its lease lapsed.
  const rows = await db.sql<{ status: string; leaseEpoch: number }[]>`SELECT status, lease_epoch FROM engine_invocations WHERE input->>'tag' = 'late-step'`;
  assert.deepEqual(rows.map((r) => [r.status, r.leaseEpoch]), [['completed', 1]]);
});

test('a carried write whose answer was lost is renewed while its retry waits: the lease is kept, nothing replays', async () => {
  let open!: () => void;
  readGate = new Promise<void>((r) => (open = r));
  loseNext = 'WITH s AS';
  const done = engine.call(Lazy, 'steps', { n: 1, tag: 'renew-uncertain' });
  const id = await waitFor(async () => (await db.sql<{ id: string }[]>`SELECT id FROM engine_invocations WHERE input->>'tag' = 'renew-uncertain'`)[0]?.id);
  // The retry's look for the row is held: until it answers, only a renewal keeps the lease.
  await waitFor(() => renewedIds.has(id));
  open();
  assert.equal(await done, 1);
  assert.equal(ran.get('renew-uncertain:0'), 1);
  const rows = await db.sql<{ status: string; leaseEpoch: number }[]>`SELECT status, lease_epoch FROM engine_invocations WHERE id = ${id}`;
  assert.deepEqual(rows.map((r) => [r.status, r.leaseEpoch]), [['completed', 1]]);
});

test('a renewal that finds no row while a carrier failed uncommitted keeps the execution: nothing replays', async () => {
  let open!: () => void;
  readGate = new Promise<void>((r) => (open = r));
  failNext = 'WITH s AS';
  // The retry's look for the row waits until a renewal naming it has answered "not found".
  slowRenewal = { ran: () => setImmediate(open), until: Promise.resolve() };
  assert.equal(await engine.call(Lazy, 'steps', { n: 1, tag: 'renew-none' }), 1);
  assert.equal(ran.get('renew-none:0'), 1);
  const rows = await db.sql<{ status: string; leaseEpoch: number }[]>`SELECT status, lease_epoch FROM engine_invocations WHERE id = ${failedId}`;
  assert.deepEqual(rows.map((r) => [r.status, r.leaseEpoch]), [['completed', 1]]);
});

test('a renewal sent before the retried carrier committed and answered after it keeps the execution: nothing replays', async () => {
  let open!: () => void;
  readGate = new Promise<void>((r) => (open = r));
  let committed!: () => void;
  const carrierCommitted = new Promise<void>((r) => (committed = r));
  failNext = 'WITH s AS';
  answered = { text: 'WITH s AS', done: committed };
  // Its snapshot has no row; its answer comes after the retry's carrier committed and was taken in.
  slowRenewal = { ran: open, until: carrierCommitted.then(() => new Promise((r) => setImmediate(r))) };
  assert.equal(await engine.call(Lazy, 'steps', { n: 2, tag: 'renew-late' }), 2);
  assert.equal(answered, null, 'the interleaving happened');
  assert.deepEqual([ran.get('renew-late:0'), ran.get('renew-late:1')], [1, 1]);
  const rows = await db.sql<{ status: string; leaseEpoch: number }[]>`SELECT status, lease_epoch FROM engine_invocations WHERE id = ${failedId}`;
  assert.deepEqual(rows.map((r) => [r.status, r.leaseEpoch]), [['completed', 1]]);
});

test('concurrent lazy calls share statements and each starts once', async () => {
  seen.length = 0;
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => engine.call(Lazy, 'steps', { n: 3, tag: `many${i}` })));
  assert.deepEqual(results, Array.from({ length: 20 }, () => 3));
  // 20 starts, 60 entries and 20 finishes: alone they would be 80 statements (each start with
  // its first entry). Made in the same turns, they share statements, the starts too.
  assert.ok(writes().length < 80, `${writes().length} statements for 80 writes`);
  assert.ok(seen.filter((s) => s.includes('engine_start')).length < 20, 'the starts share statements');
  const rows = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_invocations WHERE input->>'tag' LIKE 'many%' AND status = 'completed'`;
  assert.equal(rows[0]!.n, 20);
  for (let i = 0; i < 20; i++) for (let s = 0; s < 3; s++) assert.equal(ran.get(`many${i}:${s}`), 1);
});
