// A start whose answer is lost: the statement that creates an invocation commits, then the
// connection dies before the answer arrives. The caller must not be told "failed, retry" about
// work that goes on (a retry would start it twice): the engine asks the database whether its
// own invocation id exists, and waits for it like any other when it does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import type { Sql } from '../../../src/store/db';
import { defineService, handler } from '../../../src/workflow/engine';
import { testEngine } from './helpers';

const db = await testDb();

const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
/** The next engine_start statement: its answer lost after it committed, or never sent. */
let loseNextStart = false;
let failNextStart = false;
/** The statement failNextStart failed. */
let failedText = '';
const lossy = new Proxy(db.sql, {
  apply(target, thisArg, args: unknown[]) {
    const text = Array.isArray(args[0]) ? (args[0] as string[]).join('') : '';
    const start = text.includes('engine_start(');
    if (start && failNextStart) {
      failNextStart = false;
      failedText = text;
      return Promise.reject(reset());
    }
    const q = Reflect.apply(target as unknown as (...a: unknown[]) => unknown, thisArg, args);
    if (!start || !loseNextStart) return q;
    loseNextStart = false;
    return Promise.resolve(q).then(() => {
      throw reset();
    });
  },
}) as Sql;

const ran: { id: string; n: number }[] = [];
const Svc = defineService('startAnswer', {
  go: handler({ input: z.object({ n: z.number() }), output: z.string() }, async (ctx, { n }) => {
    await ctx.run('work', () => void ran.push({ id: ctx.invocationId, n }));
    return `done ${n}`;
  }),
  // Never reads its id: its start is carried by its step's journal write alone.
  quiet: handler({ input: z.object({ n: z.number() }), output: z.string() }, async (ctx, { n }) => {
    await ctx.run('work', () => void ran.push({ id: '', n }));
    return `done ${n}`;
  }),
});
const engine = testEngine(lossy, { workerId: 'start-answer' });
engine.register(Svc);
await engine.start();

// The handler reads its id inside its step body: without an idempotency key the call starts
// lazily, and reading the id writes the start as a statement of its own (lazy-start.ts); the
// step's journal write then follows a start whose answer was lost.
test('a call whose start committed but whose answer was lost gets the result, and the work runs once', async () => {
  loseNextStart = true;
  assert.equal(await engine.call(Svc, 'go', { n: 1 }), 'done 1');
  assert.equal(loseNextStart, false, 'the answer was lost');
  const rows = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_invocations WHERE service = 'startAnswer' AND input->>'n' = '1'`;
  assert.equal(rows[0]!.n, 1, 'one invocation');
  assert.equal(ran.filter((r) => r.n === 1).length, 1, 'its step ran once');
});

// An idempotency key keeps a call's start a statement of its own, before the handler runs.
test('an eager call whose start committed but whose answer was lost gets the result, and the work runs once', async () => {
  loseNextStart = true;
  assert.equal(await engine.call(Svc, 'go', { n: 11 }, { idempotencyKey: 'one' }), 'done 11');
  assert.equal(loseNextStart, false, 'the answer was lost');
  const rows = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_invocations WHERE service = 'startAnswer' AND input->>'n' = '11'`;
  assert.equal(rows[0]!.n, 1, 'one invocation');
  assert.equal(ran.filter((r) => r.n === 11).length, 1, 'its step ran once');
});

test('a send whose answer was lost returns the invocation it started', async () => {
  loseNextStart = true;
  const { id } = await engine.send(Svc, 'go', { n: 2 });
  assert.equal(await engine.result(id), 'done 2');
});

test('a start that never reached the database fails with the database error, and nothing runs', async () => {
  const before = ran.length;
  failNextStart = true;
  await assert.rejects(engine.call(Svc, 'go', { n: 3 }, { idempotencyKey: 'three' }), (err: Error & { code?: string }) => err.code === 'ECONNRESET');
  const rows = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_invocations WHERE service = 'startAnswer' AND input->>'n' = '3'`;
  assert.equal(rows[0]!.n, 0);
  assert.equal(ran.length, before);
});

// The contract of a lazy start (lazy-start.ts): the database away at its first write does not
// fail the call; the step ran, and the write carrying the start waits the outage out.
test('a lazy call whose start never reached the database waits it out like any write: it answers, and its step ran once', async () => {
  const before = ran.length;
  failNextStart = true;
  assert.equal(await engine.call(Svc, 'quiet', { n: 4 }), 'done 4');
  assert.equal(failNextStart, false, 'a start failed');
  assert.match(failedText, /INSERT INTO engine_journal/, 'the failed start was carried by the journal write of the step');
  assert.equal(ran.length, before + 1);
  const rows = await db.sql<{ status: string }[]>`SELECT status FROM engine_invocations WHERE service = 'startAnswer' AND input->>'n' = '4'`;
  assert.deepEqual(rows.map((r) => r.status), ['completed']);
});
