// A lazy start (src/workflow/engine/lazy-start.ts) at its edges: an input the database refuses
// fails the call at once with the database's error and runs nothing; the row stores the input
// as it was at the call; engine.stop() hands a lazy call in flight back like an eager one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { defineService, handler } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';

const db = await testDb();

let steps = 0;
let release: (() => void) | null = null;
const Edge = defineService('lazyEdge', {
  echo: handler({ input: z.object({ s: z.string() }), output: z.string() }, async (ctx, { s }) => ctx.run('echo', () => (steps++, s))),
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
  for (const [s, code] of refused) {
    await assert.rejects(engine.call(Edge, 'echo', { s }), (err: Error & { code?: string }) => err.code === code, JSON.stringify(s));
  }
  assert.equal(steps, 0, 'no step ran');
  const rows = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_invocations WHERE service = 'lazyEdge'`;
  assert.equal(rows[0]!.n, 0);
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
