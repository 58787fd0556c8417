import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { handler, TerminalError } from '../../../src/workflow/engine';
import { testEngine } from './helpers';

const db = await testDb();
const engine = testEngine(db.sql);

const Steps = engine.service('steps', {
  ten: handler({ input: z.object({ n: z.number() }), output: z.number() }, async (ctx, { n }) => {
    let acc = n;
    for (let i = 0; i < 10; i++) acc = await ctx.run(`step-${i}`, () => acc + 1);
    return acc;
  }),
});

await engine.start();

test('a service handler runs its steps and returns the result', async () => {
  const out = await engine.call(Steps, 'ten', { n: 5 });
  assert.equal(out, 15);
  const [inv] = await engine.listInvocations({ target: 'steps' });
  assert.equal(inv!.status, 'completed');
  const full = await engine.getInvocation(inv!.id);
  assert.equal(full.journal.length, 10);
  assert.deepEqual(full.journal.map((j) => j.name), Array.from({ length: 10 }, (_, i) => `step-${i}`));
  assert.equal(full.journal[9]!.value, 15);
});
