// Awakeables, timers, races and cancellation, on an engine that keeps suspended executions
// parked in memory (the fast path), plus one that must replay (maxParked 0) for cancellation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { AppError } from '../../../src/errors';
import { CancelledError, handler, TerminalError, TimeoutError } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';

const db = await testDb();
const engine = testEngine(db.sql);

const published = new Map<string, string>();
const effects: string[] = [];

const Waiter = engine.service('waiter', {
  early: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    const a = ctx.awakeable<string>();
    // Resolved from outside before the handler ever waits on it.
    await ctx.run('resolve-now', () => engine.resolveAwakeable(a.id, 'early bird'));
    return a.promise;
  }),
  wait: handler({ input: z.object({ timeoutMs: z.number().optional() }), output: z.string() }, async (ctx, { timeoutMs }) => {
    const a = ctx.awakeable<string>();
    await ctx.run('publish', () => void published.set(ctx.invocationId, a.id));
    try {
      return await (timeoutMs ? a.promise.orTimeout(timeoutMs) : a.promise);
    } catch (err) {
      if (err instanceof TimeoutError) return 'timed out';
      if (err instanceof CancelledError) throw err;
      if (err instanceof TerminalError) return `rejected: ${err.message}`;
      throw err;
    }
  }),
  nap: handler({ input: z.object({ ms: z.number() }), output: z.number() }, async (ctx, { ms }) => {
    const t0 = await ctx.run('t0', () => Date.now());
    await ctx.sleep('nap', ms);
    return ctx.run('elapsed', () => Date.now() - t0);
  }),
  compensating: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    await ctx.run('reserve', () => void effects.push('reserve'));
    try {
      const a = ctx.awakeable<string>();
      await ctx.run('publish', () => void published.set(ctx.invocationId, a.id));
      await a.promise;
      return 'finished';
    } finally {
      await ctx.run('release', () => void effects.push('release'));
    }
  }),
  sleepy: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    await ctx.sleep('long', 60_000);
    return 'woke';
  }),
});

const Boss = engine.service('boss', {
  delegate: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    try {
      return await ctx.call(Waiter, 'wait', {});
    } finally {
      // A compensation that itself waits: it must not be cancelled a second time.
      await ctx.sleep('grace', 30);
      await ctx.run('undo', () => void effects.push('undo'));
    }
  }),
});

await engine.start();

test('an awakeable resolved before the waiter suspends is not lost', async () => {
  assert.equal(await engine.call(Waiter, 'early', {}), 'early bird');
});

test('an awakeable resolved after the waiter suspended wakes it with the value', async () => {
  const { id } = await engine.send(Waiter, 'wait', {});
  await waitFor('suspended', async () => (await engine.getInvocation(id)).status === 'suspended');
  const journal = (await engine.getInvocation(id)).journal;
  assert.ok(journal.some((j) => j.kind === 'awakeable' && j.status === 'pending'), 'pending awakeable is visible to operators');
  assert.equal(await engine.resolveAwakeable(published.get(id)!, 'late value'), true);
  assert.equal(await engine.result(id), 'late value');
  assert.equal(await engine.resolveAwakeable(published.get(id)!, 'again'), false, 'a second resolution is refused');
});

test('a rejected awakeable raises a TerminalError in the waiter', async () => {
  const { id } = await engine.send(Waiter, 'wait', {});
  await waitFor('published', async () => published.has(id));
  await engine.rejectAwakeable(published.get(id)!, 'sentinel unhealthy');
  assert.equal(await engine.result(id), 'rejected: sentinel unhealthy');
});

test('orTimeout raises a TimeoutError when nobody resolves in time', async () => {
  const t0 = Date.now();
  assert.equal(await engine.call(Waiter, 'wait', { timeoutMs: 200 }), 'timed out');
  assert.ok(Date.now() - t0 >= 195);
  const inv = (await engine.listInvocations({ target: 'waiter' }))[0]!;
  const kinds = (await engine.getInvocation(inv.id)).journal.map((j) => j.kind);
  assert.deepEqual(kinds, ['awakeable', 'run', 'sleep', 'race']);
});

test('orTimeout passes the value through when resolved in time', async () => {
  const { id } = await engine.send(Waiter, 'wait', { timeoutMs: 5_000 });
  await waitFor('published', async () => published.has(id));
  await engine.resolveAwakeable(published.get(id)!, 'in time');
  assert.equal(await engine.result(id), 'in time');
});

test('a durable sleep suspends and wakes after its time', async () => {
  const elapsed = await engine.call(Waiter, 'nap', { ms: 250 });
  assert.ok(elapsed >= 245, `woke after ${elapsed} ms`);
});

test('cancellation raises at the suspension point and compensations run', async () => {
  effects.length = 0;
  const { id } = await engine.send(Waiter, 'compensating', {});
  await waitFor('suspended', async () => (await engine.getInvocation(id)).status === 'suspended');
  assert.equal((await engine.cancel(id)).status, 'suspended');
  await assert.rejects(engine.result(id), (err: unknown) => err instanceof CancelledError);
  const inv = await engine.getInvocation(id);
  assert.equal(inv.status, 'cancelled');
  assert.deepEqual(effects, ['reserve', 'release']);
  assert.ok(inv.journal.some((j) => j.name === 'release'));
  assert.equal((await engine.cancel(id)).status, 'cancelled', 'cancelling again is a no-op');
});

test('cancelling a sleeping invocation wakes it at once', async () => {
  const { id } = await engine.send(Waiter, 'sleepy', {});
  await waitFor('suspended', async () => (await engine.getInvocation(id)).status === 'suspended');
  await engine.cancel(id);
  await assert.rejects(engine.result(id), (err: unknown) => err instanceof CancelledError);
});

test('awakeable ids are checked', async () => {
  await assert.rejects(engine.resolveAwakeable('nonsense', 1), (err: unknown) => err instanceof AppError && err.status === 400);
  await assert.rejects(
    engine.resolveAwakeable('awk-aaaaaaaaaaaaaaaa-1', 1),
    (err: unknown) => err instanceof AppError && err.status === 404,
  );
  await assert.rejects(engine.cancel('inv-aaaaaaaaaaaaaaaa'), (err: unknown) => err instanceof AppError && err.status === 404);
  await assert.rejects(engine.result('inv-aaaaaaaaaaaaaaaa'), (err: unknown) => err instanceof AppError && err.status === 404);
});

test('cancelling a caller cancels the call it waits on, and its compensation may wait', async () => {
  effects.length = 0;
  const { id } = await engine.send(Boss, 'delegate', {});
  const child = await waitFor('child suspended', async () => {
    const c = (await engine.listInvocations({ target: 'waiter' })).find((i) => i.parentId === id);
    return c && c.status === 'suspended' && (await engine.getInvocation(id)).status === 'suspended' && c;
  });
  await engine.cancel(id);
  await assert.rejects(engine.result(id), (err: unknown) => err instanceof CancelledError);
  assert.equal((await engine.getInvocation(child.id)).status, 'cancelled');
  assert.deepEqual(effects, ['undo']);
  const journal = (await engine.getInvocation(id)).journal;
  const grace = journal.find((j) => j.name === 'grace')!;
  assert.equal(grace.status, 'done');
  assert.equal(grace.failure, null);
});
