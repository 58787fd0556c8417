// An exclusive invocation's finish hands its key to the next queued one and claims it for this
// process in the same statement; the process then starts it from the finish's answer. A lease
// renewal whose statement ran after that finish committed, and whose answer came back before
// the finish's, found the row no longer `running` and dropped the finishing execution as if
// its lease were lost: the finish's answer then found it detached and never started the next
// invocation, which held the key, claimed for this process, until its lease lapsed (30 s by
// default): every caller queued on the key waited that long (bench:engine's one-key collapse).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import type { Sql } from '../../../src/store/db';
import { defineObject, handler } from '../../../src/workflow/engine';
import { testEngine, withDeadline } from './helpers';

const db = await testDb();

function latch() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}
const entered = latch();
const gate = latch();
/** Opened once a renewal sent after the finish committed has been answered. */
const renewedAfterFinish = latch();
let holdNextFinish = false;
let finishCommitted = false;

// The order the race needs, made rather than waited for: the finish's answer is held back
// (its statement has committed) until a renewal sent after that commit has been answered.
const sql = new Proxy(db.sql, {
  apply(target, self, args) {
    const text = Array.isArray(args[0]) ? (args[0] as readonly string[]).join('$') : '';
    const q = Reflect.apply(target as unknown as (...a: unknown[]) => PromiseLike<unknown>, self, args);
    if (holdNextFinish && text.includes('engine_finish(')) {
      holdNextFinish = false;
      return Promise.resolve(q).then(async (answer) => {
        finishCommitted = true;
        await renewedAfterFinish.opened;
        return answer;
      });
    }
    if (text.includes('renewed AS')) {
      const sentAfterCommit = finishCommitted;
      return Promise.resolve(q).then((answer) => {
        if (sentAfterCommit) renewedAfterFinish.open();
        return answer;
      });
    }
    return q;
  },
}) as Sql;

const Keyed = defineObject('handover', {
  exclusive: {
    work: handler({ input: z.object({ gated: z.boolean() }), output: z.string() }, async (ctx, { gated }) => {
      await ctx.run('step', async () => {
        if (!gated) return 0;
        entered.open();
        await gate.opened;
        return 1;
      });
      return ctx.invocationId;
    }),
  },
});

const registry = new Registry();
// Renewals every second (leaseMs / 3); the lease is long enough that none lapses on its own.
const engine = testEngine(sql, { registry, leaseMs: 3_000, pollMs: 100 });
engine.register(Keyed);
await engine.start();

const leasesLost = async () => (await registry.getSingleMetric('engine_leases_lost_total')!.get()).values[0]?.value ?? 0;

test('a renewal answered while a finish is in flight does not drop it: the next invocation on the key starts from the finish', async () => {
  const first = await engine.send(Keyed, 'work', { gated: true }, { key: 'k' });
  await withDeadline(entered.opened, 'the first invocation holding the key');
  const second = await engine.send(Keyed, 'work', { gated: false }, { key: 'k' });
  const [queued] = await db.sql<{ status: string }[]>`SELECT status FROM engine_invocations WHERE id = ${second.id}`;
  assert.equal(queued!.status, 'queued');
  const results = [engine.result(first.id), engine.result(second.id)];
  holdNextFinish = true;
  gate.open();
  assert.deepEqual(await withDeadline(Promise.all(results), 'both invocations'), [first.id, second.id]);
  // The order was made, not hoped for: the finish was held until a later renewal answered.
  assert.ok(finishCommitted && !holdNextFinish, 'the finish statement was found and held');
  const [row] = await db.sql<{ leaseEpoch: number; attempts: number }[]>`
    SELECT lease_epoch, attempts FROM engine_invocations WHERE id = ${second.id}`;
  // Started on the lease the hand-over gave it, not claimed again once that lease lapsed.
  assert.deepEqual({ epoch: row!.leaseEpoch, attempts: row!.attempts }, { epoch: 1, attempts: 1 });
  assert.equal(await leasesLost(), 0, 'no lease was lost: the finish was ours');
});
