// Two engines (two ctrl replicas) on one database with short timings, both able to run every
// invocation: due timers of invocations parked on one are claimed by the other, which then
// finishes them. Every wait must still settle: a client's call() on either replica, a parent
// waiting on a child, an awakeable resolved from the other side. A parked execution that the
// other replica took over is stale and must be dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { createRegistry } from '../../../src/http/metrics';
import { defineService, handler, type Engine } from '../../../src/workflow/engine';
import { testEngine, waitFor, withDeadline } from './helpers';

const db = await testDb();

const published = new Map<string, string>();

function replicaDefs(worker: string) {
  const Nap = defineService('replicaNap', {
    nap: handler({ input: z.object({ ms: z.number() }), output: z.string() }, async (ctx, { ms }) => {
      await ctx.sleep('nap', ms);
      // Records which replica finished it.
      return ctx.run('finish', () => worker);
    }),
  });
  const Parent = defineService('replicaParent', {
    parent: handler({ input: z.object({ ms: z.number() }), output: z.string() }, async (ctx, { ms }) => {
      const child = await ctx.call(Nap, 'nap', { ms });
      await ctx.sleep('after-child', ms);
      return ctx.run('finish', () => `${child}>${worker}`);
    }),
    awaitIt: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
      const a = ctx.awakeable<string>();
      await ctx.run('publish', () => void published.set(ctx.invocationId, a.id));
      return a.promise;
    }),
  });
  return { Nap, Parent };
}

function replica(workerId: string): { engine: Engine; registry: ReturnType<typeof createRegistry>; defs: ReturnType<typeof replicaDefs> } {
  const registry = createRegistry();
  // stealAfterMs 0: a due timer is anyone's at once, so the other replica wins about half the
  // races for timers of invocations parked here.
  const engine = testEngine(db.sql, { workerId, leaseMs: 2_000, pollMs: 50, stealAfterMs: 0, registry });
  const defs = replicaDefs(workerId);
  engine.register(defs.Nap);
  engine.register(defs.Parent);
  return { engine, registry, defs };
}

const A = replica('ra');
const B = replica('rb');
await A.engine.start();
await B.engine.start();

const parked = async (r: typeof A) => Number(/engine_executions\{state="parked"\} (\d+)/.exec(await r.registry.metrics())?.[1]);

test('calls on both replicas answer when the other replica claims their due timers and finishes them', async () => {
  const calls = Array.from({ length: 24 }, (_, i) => {
    const caller = i % 2 === 0 ? A : B;
    const name = caller === A ? 'ra' : 'rb';
    const ms = 30 + (i % 4) * 40;
    const p =
      i % 3 === 0
        ? caller.engine.call(caller.defs.Parent, 'parent', { ms }).then((r) => ({ caller: name, finisher: r.split('>')[1]! }))
        : caller.engine.call(caller.defs.Nap, 'nap', { ms }).then((r) => ({ caller: name, finisher: r }));
    return withDeadline(p, `call ${i} on ${name}`);
  });
  const results = await Promise.all(calls);
  assert.equal(results.length, 24);
  const crossed = results.filter((r) => r.caller !== r.finisher).length;
  // Positive evidence that the path under test was taken: some work finished on the replica
  // that did not start it (each call is a coin flip per timer; all 24 staying home is ~1e-7).
  assert.ok(crossed > 0, 'no invocation finished on the other replica');
  // Stale parked executions (their invocation was taken over and finished elsewhere) are dropped.
  await waitFor('no parked executions left', async () => (await parked(A)) === 0 && (await parked(B)) === 0);
});

test('an awakeable resolved on the other replica wakes the invocation parked here', async () => {
  for (const [home, other] of [
    [A, B],
    [B, A],
  ] as const) {
    const { id } = await home.engine.send(home.defs.Parent, 'awaitIt', {});
    await waitFor('parked', async () => (await home.engine.getInvocation(id)).status === 'suspended' && published.has(id));
    assert.equal(await other.engine.resolveAwakeable(published.get(id)!, 'across'), true);
    assert.equal(await withDeadline(home.engine.result(id), 'result on the home replica'), 'across');
    assert.equal(await withDeadline(other.engine.result(id), 'result on the other replica'), 'across');
  }
});
