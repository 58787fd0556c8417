// A lazy start (src/workflow/engine/lazy-start.ts) at its edges: an input the database refuses
// fails the call at once with the database's error and runs nothing; the row stores the input
// as it was at the call; any idempotency key, even an empty one, takes the eager start;
// a start retried while stop() detaches the call is not written after it; engine.stop() hands a lazy call in flight back like an eager one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import type { Sql } from '../../../src/store/db';
import { defineService, handler } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';

const db = await testDb();

let steps = 0;
let keyedRuns = 0;
let release: (() => void) | null = null;
const Edge = defineService('lazyEdge', {
  echo: handler({ input: z.object({ s: z.string() }), output: z.string() }, async (ctx, { s }) => ctx.run('echo', () => (steps++, s))),
  // Reads its id between steps: the row is written by a start statement of its own.
  keyed: handler({ input: z.object({ n: z.number() }), output: z.string() }, async (ctx, { n }) => {
    void ctx.invocationId;
    await ctx.run('work', () => void keyedRuns++);
    return `done ${n}`;
  }),
});

const engine = testEngine(db.sql, { workerId: 'lazy-edge' });
engine.register(Edge);
await engine.start();

test('an input the database refuses fails the call with the database error, and no step runs', async () => {
  // jsonb refuses NUL anywhere (22P05) and a lone surrogate (22P02), both of which zod takes.
  const refused: [string, string][] = [
    ['a\u0000b', '22P05'],
    ['a\ud800b', '22P02'],
    ['a\udc00b', '22P02'],
  ];
  const before = steps;
  const rowsBefore = (await db.sql`SELECT 1 FROM engine_invocations WHERE service = 'lazyEdge'`).length;
  for (const [s, code] of refused) {
    await assert.rejects(engine.call(Edge, 'echo', { s }), (err: Error & { code?: string }) => err.code === code, JSON.stringify(s));
  }
  assert.equal(steps, before, 'no step ran');
  assert.equal((await db.sql`SELECT 1 FROM engine_invocations WHERE service = 'lazyEdge'`).length, rowsBefore, 'no row');
  // A backslash before u0000 and a surrogate pair are not refused, nor taken for what is.
  assert.equal(await engine.call(Edge, 'echo', { s: 'a\\u0000b \ud83d\ude00' }), 'a\\u0000b \ud83d\ude00');
});

test('the row stores the input as it was at the call, not as it is at the first write', async () => {
  const input = { s: 'at the call' };
  const done = engine.call(Edge, 'echo', input);
  input.s = 'changed after';
  assert.equal(await done, 'at the call');
  const rows = await db.sql<{ input: { s: string } }[]>`SELECT input FROM engine_invocations WHERE service = 'lazyEdge' AND handler = 'echo' ORDER BY created_at DESC LIMIT 1`;
  assert.deepEqual(rows.map((r) => r.input.s), ['at the call']);
});

test('an empty idempotency key is a key: the second call dedupes to the first, and its step runs once', async () => {
  assert.equal(await engine.call(Edge, 'keyed', { n: 1 }, { idempotencyKey: '' }), 'done 1');
  assert.equal(await engine.call(Edge, 'keyed', { n: 2 }, { idempotencyKey: '' }), 'done 1');
  assert.equal(keyedRuns, 1);
  const rows = await db.sql<{ idem: string | null }[]>`SELECT idempotency_key AS idem FROM engine_invocations WHERE service = 'lazyEdge' AND handler = 'keyed'`;
  assert.deepEqual(rows.map((r) => r.idem), ['']);
});

let heldRuns = 0;
const Stop = defineService('lazyStop', {
  held: handler({ input: z.object({}), output: z.string() }, async (ctx) =>
    ctx.run('first', async () => {
      if (heldRuns++ === 0) await new Promise<void>((r) => (release = r));
      return 'done';
    }),
  ),
});

test('engine.stop() with a lazy call in flight writes its row and hands it back, and another process finishes it', async () => {
  // Its own engines: this one stops. The deadline only bounds a stop that cannot write; the
  // start is written long before it (one statement).
  const a = testEngine(db.sql, { workerId: 'lazy-stop-a', stopTimeoutMs: 2_000 });
  a.register(Stop);
  await a.start();
  const stopped = assert.rejects(a.call(Stop, 'held', {}), (err: Error & { code?: string }) => err.code === 'ERR_ENGINE_STOPPED');
  await waitFor(() => release !== null);
  assert.equal((await db.sql`SELECT 1 FROM engine_invocations WHERE service = 'lazyStop'`).length, 0, 'not written before the stop');
  await a.stop();
  await stopped;
  const rows = await db.sql<{ id: string; status: string; leaseOwner: string | null }[]>`SELECT id, status, lease_owner FROM engine_invocations WHERE service = 'lazyStop'`;
  assert.deepEqual(rows.map((r) => [r.status, r.leaseOwner]), [['ready', null]], 'handed back');
  // The first run's body ends after the hand-back: its write is refused, nothing is created twice.
  release!();
  const b = testEngine(db.sql, { workerId: 'lazy-stop-b' });
  b.register(Stop);
  await b.start();
  assert.equal(await b.result(rows[0]!.id), 'done');
  assert.equal(heldRuns, 2);
});

const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
let lateRuns = 0;
let releaseLate: (() => void) | null = null;
const LateStop = defineService('lazyLateStop', {
  held: handler({ input: z.object({}), output: z.string() }, async (ctx) =>
    ctx.run('first', async () => {
      if (lateRuns++ === 0) await new Promise<void>((r) => (releaseLate = r));
      return 'done';
    }),
  ),
});

test('a start retried while stop() detaches the call is not written after stop() returned', async () => {
  // Start statements fail as if cut; the retry's look for the row waits until stop() returned.
  let failStarts = false;
  let lookReached = false;
  let stopped!: () => void;
  const stopReturned = new Promise<void>((r) => (stopped = r));
  let looked!: () => void;
  const lookAnswered = new Promise<void>((r) => (looked = r));
  const sentAfter: string[] = [];
  const cut = new Proxy(db.sql, {
    apply(target, thisArg, args: unknown[]) {
      const text = Array.isArray(args[0]) ? (args[0] as string[]).join('$') : '';
      const run = () => Promise.resolve(Reflect.apply(target as unknown as (...a: unknown[]) => unknown, thisArg, args));
      if (failStarts && text.includes('engine_start(')) return Promise.reject(reset());
      if (lookReached && (text.includes('engine_start(') || text.includes('engine_journal'))) sentAfter.push(text);
      if (failStarts && text.startsWith('SELECT * FROM engine_invocations WHERE id')) {
        lookReached = true;
        return stopReturned.then(() => ((failStarts = false), run())).then((rows) => (looked(), rows));
      }
      return run();
    },
  }) as Sql;
  // The deadline is what ends this stop (the body is held); the retry reaches its look long before.
  const a = testEngine(cut, { workerId: 'lazy-late-a', stopTimeoutMs: 2_000 });
  a.register(LateStop);
  await a.start();
  const call = a.call(LateStop, 'held', {}).catch((e: Error & { code?: string }) => e.code);
  await waitFor(() => releaseLate !== null);
  failStarts = true;
  await a.stop();
  assert.equal(lookReached, true, 'the retry was on its way when stop() detached the call');
  assert.equal(await call, 'ERR_ENGINE_STOPPED');
  stopped();
  await lookAnswered;
  // The look answered "no row": what the retry does next (a start sent at once, or through a
  // group commit flushed on nextTick) happens before the next macrotask.
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(sentAfter, [], 'nothing written for it after stop()');
  assert.equal((await db.sql`SELECT 1 FROM engine_invocations WHERE service = 'lazyLateStop'`).length, 0);
  releaseLate!();
});
