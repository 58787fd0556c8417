// Virtual objects: exclusive handlers serialise per key in arrival order and keep the key while
// suspended; shared handlers run beside them; distinct keys run concurrently.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { handler } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';

const db = await testDb();
const engine = testEngine(db.sql, { concurrency: 50 });

let active = 0;
let maxActive = 0;
const order: string[] = [];
let barrier: { need: number; arrived: number; open: () => void; opened: Promise<void> } | null = null;

const Serial = engine.object('serial', {
  exclusive: {
    work: handler({ input: z.object({ i: z.number() }), output: z.number() }, async (ctx, { i }) => {
      await ctx.run('enter', () => {
        active++;
        maxActive = Math.max(maxActive, active);
        order.push(ctx.invocationId);
      });
      await ctx.run('middle', () => new Promise((r) => setImmediate(r)));
      await ctx.run('leave', () => void active--);
      return i;
    }),
    rendezvous: handler({ input: z.object({}), output: z.number() }, async (ctx) => {
      await ctx.run('arrive', async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        barrier!.arrived++;
        if (barrier!.arrived === barrier!.need) barrier!.open();
        await barrier!.opened;
        active--;
      });
      return 1;
    }),
  },
});

const Sentinel = engine.object('sentinel', {
  exclusive: {
    deploy: handler({ input: z.object({ image: z.string() }), output: z.string() }, async (ctx, { image }) => {
      const ready = ctx.awakeable<string>();
      await ctx.set('notifyReady', ready.id);
      const health = await ready.promise.orTimeout(10_000);
      await ctx.clear('notifyReady');
      return `${image}:${health}`;
    }),
    other: handler({ input: z.object({}), output: z.string() }, async (ctx) => ctx.run('other', () => 'other ran')),
  },
  shared: {
    notifyReady: handler({ input: z.object({ health: z.string() }), output: z.boolean() }, async (ctx, { health }) => {
      const id = await ctx.get<string>('notifyReady');
      if (!id) return false;
      return ctx.resolveAwakeable(id, health);
    }),
  },
});

await engine.start();

test('200 invocations on one key from concurrent callers never overlap and run in arrival order', async () => {
  active = 0;
  maxActive = 0;
  order.length = 0;
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => engine.call(Serial, 'work', { i }, { key: 'one' })));
  assert.deepEqual(results, Array.from({ length: 200 }, (_, i) => i));
  assert.equal(maxActive, 1, 'two exclusive invocations of one key overlapped');
  const arrival = await db.sql<{ id: string }[]>`
    SELECT id FROM engine_invocations WHERE service = 'serial' AND object_key = 'one' ORDER BY key_seq`;
  assert.equal(arrival.length, 200);
  assert.deepEqual(order, arrival.map((r) => r.id));
});

test('exclusive invocations on distinct keys run concurrently', async () => {
  active = 0;
  maxActive = 0;
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  barrier = { need: 20, arrived: 0, open, opened };
  // Each waits inside its step until all 20 have arrived: only possible if they run together.
  const out = await Promise.all(Array.from({ length: 20 }, (_, i) => engine.call(Serial, 'rendezvous', {}, { key: `k${i}` })));
  assert.equal(out.length, 20);
  assert.equal(maxActive, 20);
});

test('a shared handler resolves the awakeable of a suspended exclusive one, which keeps its key meanwhile', async () => {
  const deploy = await engine.send(Sentinel, 'deploy', { image: 'v2' }, { key: 's1' });
  await waitFor('deploy suspended with its awakeable stored', async () => {
    const inv = await engine.getInvocation(deploy.id);
    return inv.status === 'suspended' && (await engine.state(Sentinel, 's1')).notifyReady;
  });
  const other = await engine.send(Sentinel, 'other', {}, { key: 's1' });
  const later = await engine.send(Sentinel, 'other', {}, { key: 's1', delayMs: 50 });
  // The key is held by the suspended deploy: the next exclusive calls wait in the queue (the
  // delayed one joins it when its delay is up).
  await waitFor('delayed send queued', async () => (await engine.getInvocation(later.id)).status === 'queued');
  assert.equal((await engine.getInvocation(other.id)).status, 'queued');
  assert.equal(await engine.call(Sentinel, 'notifyReady', { health: 'healthy' }, { key: 's1' }), true);
  assert.equal(await engine.result(deploy.id), 'v2:healthy');
  assert.equal(await engine.result(other.id), 'other ran');
  assert.equal(await engine.result(later.id), 'other ran');
  const d = await engine.getInvocation(deploy.id);
  const o = await engine.getInvocation(other.id);
  assert.ok(new Date(o.completedAt!).getTime() >= new Date(d.completedAt!).getTime());
  assert.deepEqual(await engine.state(Sentinel, 's1'), {});
});
