// Two engines (two workers) on one database in one process: wake-ups cross workers through
// NOTIFY, a parked execution resumes in memory on its own worker, a stopped worker's parked
// and running invocations are taken over, and its leases are handed back at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../../helpers/assert';
import pino from 'pino';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { defineService, handler } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';

const db = await testDb();

const entries = new Map<string, number>();
const published = new Map<string, string>();
let zombieEntries = 0;
/** Errors the `zombie` handler caught (none: a lost lease stops it where it is). */
const zombieCaught: string[] = [];
/** Worker a's log lines: its refused writes are logged. */
const aLines: string[] = [];
let openZombie!: () => void;
const zombieGate = new Promise<void>((r) => (openZombie = r));
let release!: () => void;
let released = new Promise<void>((r) => (release = r));

const Svc = defineService('multi', {
  wait: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    // Counts how often the handler body starts: 1 = resumed from memory, 2 = replayed.
    entries.set(ctx.invocationId, (entries.get(ctx.invocationId) ?? 0) + 1);
    const a = ctx.awakeable<string>();
    await ctx.run('publish', () => void published.set(ctx.invocationId, a.id));
    return a.promise;
  }),
  zombie: handler({ input: z.object({}), output: z.number() }, async (ctx) => {
    try {
      return await ctx.run('side', async () => {
        const n = ++zombieEntries;
        if (n === 1) await zombieGate;
        return n;
      });
    } catch (err) {
      // A fenced-off journal write is not the handler's business: it must never see it.
      zombieCaught.push(String(err));
      throw err;
    }
  }),
  /** Finishes at once: for tests that only need work done (zombie's first run waits on a gate). */
  quick: handler({ input: z.object({}), output: z.number() }, async (ctx) => ctx.run('one', () => 1)),
  slow: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    await ctx.run('first', () => 1);
    await ctx.run('blocking', async () => {
      await released;
      return 2;
    });
    return 'done';
  }),
});

// Long leases: any takeover below must come from a hand-back, not from an expiry.
const a = testEngine(db.sql, { workerId: 'wa', leaseMs: 60_000, logger: pino({ level: 'debug' }, { write: (l: string) => void aLines.push(l) }) });
const b = testEngine(db.sql, { workerId: 'wb', leaseMs: 60_000 });
a.register(Svc);
b.register(Svc);
await a.start();
await b.start();

test('an awakeable resolved by another worker resumes the parked execution in memory', async () => {
  const { id } = await a.send(Svc, 'wait', {});
  await waitFor('parked', async () => (await a.getInvocation(id)).status === 'suspended' && published.has(id));
  assert.equal(await b.resolveAwakeable(published.get(id)!, 'from b'), true);
  assert.equal(await b.result(id), 'from b');
  assert.equal(entries.get(id), 1, 'resumed without replay');
});

test('an execution whose lease expired cannot record its step once another took over', async () => {
  const { id } = await a.send(Svc, 'zombie', {});
  await waitFor('first execution inside its step', async () => zombieEntries === 1);
  // Simulate a stalled process: its lease runs out while its step is still running.
  await db.sql`UPDATE engine_invocations SET due_at = now() - interval '1 second' WHERE id = ${id}`;
  assert.equal(await b.result(id), 2);
  openZombie();
  // Positive evidence that the stale execution tried to record its step and was refused.
  await waitFor('the stale write refused', async () => aLines.some((l) => l.includes(id) && l.includes('engine write refused')));
  assert.deepEqual(zombieCaught, [], 'the handler never saw the lost lease');
  const inv = await b.getInvocation(id);
  assert.equal(inv.status, 'completed');
  assert.equal(inv.attempts, 2);
  assert.deepEqual(inv.journal.map((j) => [j.name, j.value]), [['side', 2]], 'the stale execution wrote nothing');
});

test('stopping a worker hands back running leases and its parked invocations go to another', async () => {
  // A worker of this test's own to stop (a and b serve the other tests, in any order).
  const w = testEngine(db.sql, { workerId: 'ws', leaseMs: 60_000 });
  w.register(Svc);
  await w.start();
  const parked = await w.send(Svc, 'wait', {});
  await waitFor('parked', async () => (await w.getInvocation(parked.id)).status === 'suspended' && published.has(parked.id));
  const running = await w.send(Svc, 'slow', {});
  await waitFor('blocking step started', async () => (await w.getInvocation(running.id)).journal.length === 1);
  await w.stop();
  // The lease was handed back (60 s lease, so an expiry cannot explain a quick takeover).
  const inv = await waitFor('taken over', async () => {
    const v = await b.getInvocation(running.id);
    return v.leaseOwner !== null && v.leaseOwner !== 'ws' && v;
  });
  assert.equal(inv.status, 'running');
  release();
  assert.equal(await b.result(running.id), 'done');
  await b.resolveAwakeable(published.get(parked.id)!, 'after stop');
  assert.equal(await b.result(parked.id), 'after stop');
  assert.equal(entries.get(parked.id), 2, 'replayed from the journal on the other worker');
  released = Promise.resolve();
});

test('a worker never claims invocations of services it does not know', async () => {
  const Other = defineService('unrelated', {
    noop: handler({ input: z.object({}), output: z.null() }, async () => null),
  });
  const c = testEngine(db.sql, { workerId: 'wc', leaseMs: 60_000 });
  c.register(Other);
  await c.start();
  // Sent through c, which cannot run it: it must wait for b rather than fail on c.
  const ids = await Promise.all(Array.from({ length: 20 }, () => c.send(Svc, 'quick', {}).then((r) => r.id)));
  for (const id of ids) assert.equal(typeof (await b.result(id)), 'number');
  const rows = await db.sql<{ status: string; attempts: number }[]>`SELECT status, attempts FROM engine_invocations WHERE id = ANY(${ids}::text[])`;
  assertEvery(rows, (r) => r.status === 'completed' && r.attempts === 1);
  await c.stop();
});
