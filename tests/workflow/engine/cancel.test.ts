// Cancellation must always reach the handler as CancelledError, so its finally blocks run: also
// when the cancel arrives while a step runs and older timers are still pending, when it fails
// the timer of an orTimeout, and inside the workflows' wait loop (src/workflow/deploy/wait.ts), which
// treats a timeout as "check again".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { CancelledError, handler, TerminalError } from '../../../src/workflow/engine';
import { notifyHandler, openWaiter } from '../../../src/workflow/deploy/wait';
import { testEngine, waitFor, withDeadline } from './helpers';

const db = await testDb();
const engine = testEngine(db.sql);

const published = new Map<string, string>();
/** What each invocation's handler caught, and whether its finally block ran. */
const observed = new Map<string, string>();
const finals = new Set<string>();

function latch() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}
let entered = latch();
let gate = latch();
function resetLatches() {
  entered = latch();
  gate = latch();
}

/** A step that runs until the test opens the gate: the cancel arrives while it runs. */
const hold = () => {
  entered.open();
  return gate.opened;
};

async function observe<T>(id: string, body: () => Promise<T>, finallyStep: () => PromiseLike<unknown>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    observed.set(id, (err as Error).name);
    throw err;
  } finally {
    await finallyStep();
  }
}

const Svc = engine.service('cancels', {
  staleTimer: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    const id = ctx.invocationId;
    return observe(
      id,
      async () => {
        const a = ctx.awakeable<string>();
        await ctx.run('publish', () => void published.set(id, a.id));
        // Resolved by the test: the losing 60 s timer stays pending in the journal.
        await a.promise.orTimeout(60_000);
        await ctx.run('hold', hold);
        await ctx.sleep('later', 60_000);
        return 'slept';
      },
      () => ctx.run('finally', () => void finals.add(id)),
    );
  }),
  timerCancelled: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
    const id = ctx.invocationId;
    return observe(
      id,
      async () => {
        const a = ctx.awakeable<string>();
        // The timer is written at once; the awakeable only when the handler suspends on it.
        const waiting = a.promise.orTimeout(60_000);
        await ctx.run('hold', hold);
        return await waiting;
      },
      () => ctx.run('finally', () => void finals.add(id)),
    );
  }),
});

let probes = 0;
const Waits = engine.object('waits', {
  exclusive: {
    wait: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
      const id = ctx.invocationId;
      return observe(
        id,
        async () => {
          const waiter = await openWaiter(ctx, 'awk');
          await waiter.until({
            timeoutMs: 60_000,
            // Longer than any wait of the test: the only wake-up is the test's notify, so the
            // state it waits for (one check done, suspended) lasts until the test acts. A
            // short re-check ran the second check on its own a moment later, and a poll
            // slower than that never saw the state.
            recheckMs: 60_000,
            probe: async () => {
              // The second check (after the notify below) runs while the test cancels.
              if (++probes === 2) await hold();
              return { done: false, info: null };
            },
            onTimeout: () => new TerminalError('gave up'),
          });
          return 'done';
        },
        () => ctx.run('finally', () => void finals.add(id)),
      );
    }),
  },
  shared: { notify: notifyHandler('awk') },
});

await engine.start();

async function expectCancelled(id: string): Promise<void> {
  await assert.rejects(withDeadline(engine.result(id), 'the cancelled invocation'), (err: unknown) => err instanceof CancelledError);
  assert.equal(observed.get(id), 'CancelledError', 'the handler saw CancelledError');
  assert.ok(finals.has(id), 'its finally block ran');
  assert.equal((await engine.getInvocation(id)).status, 'cancelled');
}

test('a cancel that arrives while a step runs reaches the next await, though an older timer is still pending', async () => {
  resetLatches();
  const { id } = await engine.send(Svc, 'staleTimer', {});
  await waitFor('suspended on the awakeable', async () => (await engine.getInvocation(id)).status === 'suspended' && published.has(id));
  await engine.resolveAwakeable(published.get(id)!, 'x');
  await entered.opened;
  await engine.cancel(id);
  gate.open();
  await expectCancelled(id);
});

test('a cancel that fails the timer of an orTimeout raises CancelledError, not TimeoutError', async () => {
  resetLatches();
  const { id } = await engine.send(Svc, 'timerCancelled', {});
  await entered.opened;
  await engine.cancel(id);
  gate.open();
  await expectCancelled(id);
});

test('a workflow waiting in openWaiter().until that is cancelled during a re-check ends cancelled, with its finally run', async () => {
  resetLatches();
  probes = 0;
  const { id } = await engine.send(Waits, 'wait', {}, { key: 'k' });
  await waitFor('first check done and suspended', async () => probes === 1 && (await engine.getInvocation(id)).status === 'suspended');
  // Woken by a notification: the next check runs, and the cancel lands during it.
  assert.deepEqual(await engine.call(Waits, 'notify', {}, { key: 'k' }), { notified: true });
  await entered.opened;
  await engine.cancel(id);
  gate.open();
  await expectCancelled(id);
  assert.deepEqual(await engine.state(Waits, 'k'), {}, 'the waiter cleared its awakeable on the way out');
});
