// Services, steps, retries, validation, idempotency, fan-out, state and operator reads. This
// engine keeps no parked executions (maxParked 0), so every resume replays from the journal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { AppError } from '../../../src/errors';
import { handler, TerminalError, type Context } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';

const db = await testDb();
await db.sql`CREATE TABLE fx_rows (id text PRIMARY KEY, note text NOT NULL)`;
const engine = testEngine(db.sql, { maxParked: 0 });

const attempts = new Map<string, number[]>();
const mark = (k: string) => attempts.set(k, [...(attempts.get(k) ?? []), Date.now()]);
let stepName = 'first';
const published = new Map<string, string>();
const runs = new Map<string, number>();
const racers = new Map<string, [string, string, string]>();

const Helpers = engine.service('helpers', {
  counted: handler({ input: z.object({ tag: z.string() }), output: z.number() }, async (ctx, { tag }) =>
    ctx.run('count', () => {
      runs.set(tag, (runs.get(tag) ?? 0) + 1);
      return runs.get(tag)!;
    }),
  ),
  double: handler({ input: z.number(), output: z.number() }, async (ctx, n) =>
    ctx.run('double', () => {
      if (n < 0) throw new TerminalError(`negative ${n}`);
      return n * 2;
    }),
  ),
});

const Steps = engine.service('steps', {
  ten: handler({ input: z.object({ n: z.number() }), output: z.number() }, async (ctx, { n }) => {
    let acc = n;
    for (let i = 0; i < 10; i++) acc = await ctx.run(`step-${i}`, () => acc + 1);
    return acc;
  }),
  flaky: handler({ input: z.object({ failures: z.number(), max: z.number(), tag: z.string() }), output: z.string() }, async (ctx, x) =>
    ctx.run(
      'flaky',
      () => {
        mark(x.tag);
        if ((attempts.get(x.tag)?.length ?? 0) <= x.failures) throw new Error(`boom ${attempts.get(x.tag)!.length}`);
        return 'ok';
      },
      { maxAttempts: x.max, initialDelayMs: 20 },
    ),
  ),
  terminal: handler({ input: z.object({ tag: z.string() }), output: z.string() }, async (ctx, { tag }) => {
    try {
      await ctx.run('refuse', () => {
        mark(tag);
        throw new TerminalError('no way', { code: 'ERR_TEST_REFUSED' });
      });
    } catch (err) {
      assert.ok(err instanceof TerminalError);
      await ctx.run('after', () => mark(`${tag}-after`));
      throw err;
    }
    return 'unreachable';
  }),
  badOutput: handler({ input: z.object({}), output: z.number() }, async () => 'not a number' as unknown as number),
  drifting: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    await ctx.run(stepName, () => stepName);
    const a = ctx.awakeable<string>();
    await ctx.run('publish', () => void published.set(ctx.invocationId, a.id));
    return a.promise;
  }),
  fanOut: handler({ input: z.object({ n: z.number() }), output: z.object({ sum: z.number(), sent: z.string() }) }, async (ctx, { n }) => {
    const futures = Array.from({ length: n }, (_, i) => ctx.call(Helpers, 'double', i));
    const results = await ctx.all(futures);
    const sent = await ctx.send(Helpers, 'counted', { tag: 'sent-by-fanout' });
    return { sum: results.reduce((a, b) => a + b, 0), sent };
  }),
  settle: handler({ input: z.array(z.number()), output: z.array(z.string()) }, async (ctx, ns) => {
    const results = await ctx.allSettled(ns.map((n) => ctx.call(Helpers, 'double', n)));
    return results.map((r) => (r.status === 'fulfilled' ? `ok ${r.value}` : `failed ${(r.reason as Error).message}`));
  }),
  racer: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    const a1 = ctx.awakeable<string>();
    const a2 = ctx.awakeable<string>();
    const go = ctx.awakeable<void>();
    await ctx.run('publish', () => void racers.set(ctx.invocationId, [a1.id, a2.id, go.id]));
    const winner = await ctx.race([a1.promise, a2.promise]);
    // Another suspension, ended by the test once both racers are done: the replay after it
    // sees both awakeables done and must pick the journaled winner, not the first in the list.
    // (A timed pause here ended by itself, and a slow poll missed the suspension.)
    await go.promise;
    return winner;
  }),
  writeRows: handler({ input: z.object({ id: z.string(), fail: z.boolean() }), output: z.string() }, async (ctx, { id, fail }) => {
    await ctx.runTx('insert', async (tx) => {
      await tx`INSERT INTO fx_rows (id, note) VALUES (${id}, 'committed')`;
      return id;
    });
    try {
      await ctx.runTx('insert-then-fail', async (tx) => {
        await tx`INSERT INTO fx_rows (id, note) VALUES (${`${id}-2`}, 'rolled back')`;
        if (fail) throw new TerminalError('abort the transaction');
        return 'kept';
      });
    } catch (err) {
      assert.ok(err instanceof TerminalError);
      return 'rolled back';
    }
    return 'kept';
  }),
});

const Counter = engine.object('counter', {
  exclusive: {
    add: handler({ input: z.number(), output: z.number() }, async (ctx: Context, n) => {
      const cur = (await ctx.get<number>('total')) ?? 0;
      await ctx.set('total', cur + n);
      return cur + n;
    }),
    setThenGet: handler({ input: z.number(), output: z.number() }, async (ctx, n) => {
      void ctx.set('total', n);
      return (await ctx.get<number>('total'))!;
    }),
    reset: handler({ input: z.object({}), output: z.null() }, async (ctx) => {
      await ctx.clear('total');
      return null;
    }),
  },
  shared: {
    peek: handler({ input: z.object({}), output: z.number().nullable() }, async (ctx) => (await ctx.get<number>('total')) ?? null),
    sneakyWrite: handler({ input: z.object({}), output: z.null() }, async (ctx) => {
      await ctx.set('total', 1);
      return null;
    }),
  },
});

await engine.start();

test('a service handler runs its steps and returns the result; the journal is readable', async () => {
  const out = await engine.call(Steps, 'ten', { n: 5 });
  assert.equal(out, 15);
  const [inv] = await engine.listInvocations({ target: 'steps', status: 'completed' });
  assert.equal(inv!.handler, 'ten');
  const full = await engine.getInvocation(inv!.id);
  assert.deepEqual(full.journal.map((j) => j.name), Array.from({ length: 10 }, (_, i) => `step-${i}`));
  assert.equal(full.journal[9]!.value, 15);
  assert.equal(full.result, 15);
});

test('invalid input is refused with the field named and nothing written', async () => {
  const before = (await engine.listInvocations({ target: 'steps' })).length;
  await assert.rejects(engine.call(Steps, 'ten', { n: 'x' } as unknown as { n: number }), (err: unknown) => {
    assert.ok(err instanceof AppError);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'ERR_ENGINE_INPUT_INVALID');
    assert.equal(err.details[0]!.field, 'n');
    return true;
  });
  assert.equal((await engine.listInvocations({ target: 'steps' })).length, before);
});

test('output that fails its schema fails the invocation', async () => {
  await assert.rejects(engine.call(Steps, 'badOutput', {}), (err: unknown) => {
    assert.ok(err instanceof TerminalError);
    assert.equal(err.code, 'ERR_ENGINE_OUTPUT_INVALID');
    return true;
  });
});

test('a failing step is retried with growing delays until it succeeds', async () => {
  assert.equal(await engine.call(Steps, 'flaky', { failures: 2, max: 5, tag: 'retry' }), 'ok');
  const t = attempts.get('retry')!;
  assert.equal(t.length, 3);
  const first = t[1]! - t[0]!;
  const second = t[2]! - t[1]!;
  assert.ok(first >= 15, `first retry after ${first} ms`);
  assert.ok(second >= 35, `second retry after ${second} ms (backoff doubles)`);
});

test('max attempts are honoured and the step then fails terminally', async () => {
  await assert.rejects(engine.call(Steps, 'flaky', { failures: 99, max: 3, tag: 'exhaust' }), (err: unknown) => {
    assert.ok(err instanceof TerminalError);
    assert.match(err.message, /failed after 3 attempt/);
    return true;
  });
  assert.equal(attempts.get('exhaust')!.length, 3);
});

test('TerminalError stops retries at once; the handler can catch it and go on', async () => {
  await assert.rejects(engine.call(Steps, 'terminal', { tag: 'term' }), (err: unknown) => {
    assert.ok(err instanceof TerminalError);
    assert.equal(err.code, 'ERR_TEST_REFUSED');
    return true;
  });
  assert.equal(attempts.get('term')!.length, 1);
  assert.equal(attempts.get('term-after')!.length, 1);
  const [inv] = await engine.listInvocations({ target: 'steps', status: 'failed' }).then((l) => l.filter((i) => i.handler === 'terminal'));
  assert.equal(inv!.error!.code, 'ERR_TEST_REFUSED');
});

test('a replay that asks for a different step than the journal fails the invocation visibly', async () => {
  stepName = 'first';
  const { id } = await engine.send(Steps, 'drifting', {});
  await waitFor('suspension', async () => (await engine.getInvocation(id)).status === 'suspended' && published.has(id));
  stepName = 'renamed';
  await engine.resolveAwakeable(published.get(id)!, 'x');
  const inv = await waitFor('failure', async () => {
    const v = await engine.getInvocation(id);
    return v.status === 'failed' && v;
  });
  assert.equal(inv.error!.code, 'ERR_ENGINE_NON_DETERMINISM');
  assert.match(inv.error!.message, /run "first".*run "renamed"/);
});

test('the same idempotency key returns the same invocation and runs it once', async () => {
  const [a, b] = await Promise.all([
    engine.send(Helpers, 'counted', { tag: 'idem' }, { idempotencyKey: 'k1' }),
    engine.send(Helpers, 'counted', { tag: 'idem' }, { idempotencyKey: 'k1' }),
  ]);
  assert.equal(a.id, b.id);
  assert.equal([a.deduped, b.deduped].filter(Boolean).length, 1);
  assert.equal(await engine.result(a.id), 1);
  assert.equal(await engine.call(Helpers, 'counted', { tag: 'idem' }, { idempotencyKey: 'k1' }), 1);
  assert.equal(runs.get('idem'), 1);
  assert.equal(await engine.call(Helpers, 'counted', { tag: 'idem' }, { idempotencyKey: 'k2' }), 2);
});

test('calls fan out and are joined with all; sends start one-way invocations', async () => {
  const out = await engine.call(Steps, 'fanOut', { n: 6 });
  assert.equal(out.sum, 2 * (0 + 1 + 2 + 3 + 4 + 5));
  const sent = await waitFor('sent invocation', async () => {
    const v = await engine.getInvocation(out.sent);
    return v.status === 'completed' && v;
  });
  assert.equal(sent.parentId, null);
  const parent = (await engine.listInvocations({ target: 'steps' })).find((i) => i.handler === 'fanOut')!;
  const children = (await engine.listInvocations({ target: 'helpers' })).filter((i) => i.parentId === parent.id);
  assert.equal(children.length, 6);
  const journal = (await engine.getInvocation(parent.id)).journal;
  assert.deepEqual(journal.map((j) => j.kind), ['call', 'call', 'call', 'call', 'call', 'call', 'send']);
});

test('allSettled collects failed and successful calls alike', async () => {
  assert.deepEqual(await engine.call(Steps, 'settle', [1, -2, 3]), ['ok 2', 'failed negative -2', 'ok 6']);
});

test('race picks the first to complete and replays pick the same winner', async () => {
  const { id } = await engine.send(Steps, 'racer', {});
  await waitFor('racer suspended', async () => (await engine.getInvocation(id)).status === 'suspended' && racers.has(id));
  const [first, second, go] = racers.get(id)!;
  await engine.resolveAwakeable(second, 'second');
  await waitFor('race journaled', async () => {
    const v = await engine.getInvocation(id);
    return v.status === 'suspended' && v.journal.some((j) => j.kind === 'race');
  });
  await engine.resolveAwakeable(first, 'first');
  await engine.resolveAwakeable(go, undefined);
  assert.equal(await engine.result(id), 'second');
});

test('delayed sends start later', async () => {
  // A delay longer than the test, ended by the test once it has seen the send waiting: with a
  // short one, a read slower than the delay found the invocation already started.
  const { id } = await engine.send(Helpers, 'double', 21, { delayMs: 60_000 });
  assert.equal((await engine.getInvocation(id)).status, 'scheduled');
  const [row] = await db.sql<{ delay: number }[]>`SELECT extract(epoch FROM due_at - created_at)::float8 AS delay FROM engine_invocations WHERE id = ${id}`;
  assert.ok(row!.delay >= 59, `due at the end of its delay (${row!.delay} s after it was sent)`);
  // Not started before its time: a send due now, made after it, runs to its end (a claim pass
  // has run since the delayed one was written) while the delayed one still waits.
  const { id: now } = await engine.send(Helpers, 'double', 1);
  assert.equal(await engine.result(now), 2);
  assert.equal((await engine.getInvocation(id)).status, 'scheduled', 'a claim passed over the send that was not yet due');
  await db.sql.begin(async (tx) => {
    await tx`UPDATE engine_invocations SET due_at = now() WHERE id = ${id} AND status = 'scheduled'`;
    await tx`SELECT pg_notify('unkey_engine', 'n')`;
  });
  assert.equal(await engine.result(id), 42);
});

test('a database step commits its writes with its journal entry, or not at all', async () => {
  assert.equal(await engine.call(Steps, 'writeRows', { id: 'r1', fail: true }), 'rolled back');
  assert.equal(await engine.call(Steps, 'writeRows', { id: 'r2', fail: false }), 'kept');
  const rows = await db.sql<{ id: string }[]>`SELECT id FROM fx_rows ORDER BY id`;
  assert.deepEqual(rows.map((r) => r.id), ['r1', 'r2', 'r2-2']);
});

test('object state: exclusive handlers read and write, shared ones only read', async () => {
  assert.equal(await engine.call(Counter, 'add', 2, { key: 'a' }), 2);
  assert.equal(await engine.call(Counter, 'add', 3, { key: 'a' }), 5);
  assert.equal(await engine.call(Counter, 'add', 7, { key: 'b' }), 7);
  assert.equal(await engine.call(Counter, 'peek', {}, { key: 'a' }), 5);
  assert.deepEqual(await engine.state(Counter, 'a'), { total: 5 });
  await assert.rejects(engine.call(Counter, 'sneakyWrite', {}, { key: 'a' }), /only be written by exclusive/);
  await engine.call(Counter, 'reset', {}, { key: 'a' });
  assert.equal(await engine.call(Counter, 'peek', {}, { key: 'a' }), null);
  assert.deepEqual(await engine.state(Counter, 'b'), { total: 7 });
  assert.equal(await engine.call(Counter, 'setThenGet', 41, { key: 'c' }), 41, 'an unawaited set is read back');
  await assert.rejects(engine.call(Counter, 'add', 1), (err: unknown) => err instanceof AppError && err.code === 'ERR_ENGINE_KEY_REQUIRED');
});

test('readiness reports the engine ready while it runs', async () => {
  assert.equal(await engine.readinessCheck().check(), null);
});

test('metrics count finished invocations by status when a registry is given', async () => {
  const { createRegistry } = await import('../../../src/http/metrics');
  const registry = createRegistry();
  const metered = testEngine(db.sql, { registry, workerId: 'metered' });
  metered.register(Helpers);
  metered.register(Steps);
  metered.register(Counter);
  await metered.start();
  await metered.call(Helpers, 'double', 4);
  const text = await registry.metrics();
  assert.match(text, /engine_invocations_finished_total\{service="helpers",handler="double",status="completed"\} 1/);
  assert.match(text, /engine_executions\{state="running"\} 0/);
  await metered.stop();
});

test('finished invocations are purged after the retention period, with their journals', async () => {
  const id = (await engine.send(Steps, 'ten', { n: 1 })).id;
  await engine.result(id);
  assert.equal(await engine.purge(60_000), 0, 'nothing is old enough yet');
  const n = await engine.purge(0);
  assert.ok(n >= 1);
  await assert.rejects(engine.getInvocation(id), (err: unknown) => err instanceof AppError && err.status === 404);
  const [j] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_journal WHERE invocation_id = ${id}`;
  assert.equal(j!.n, 0);
});
