// A lease lost under a running handler (another replica took the invocation over) is not the
// handler's business: nothing it awaits settles any more, so its catch blocks (a deploy's
// catch-all stops topologies) never run for an invocation someone else continues. CI once saw
// a LeaseLostError in handler code after connections were terminated under a step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { defineService, handler, type Context } from '../../../src/workflow/engine';
import { testEngine, waitFor, withDeadline } from './helpers';

const db = await testDb();

function latch() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

const caught: string[] = [];
/** Step bodies run, by name. */
const ran = new Map<string, number>();
const body = (name: string, v: string) => () => {
  ran.set(name, (ran.get(name) ?? 0) + 1);
  return v;
};
/** Executions of `between` past its gate: the stale one and the new one. */
let passedGate = 0;
let entered = latch();
let gate = latch();

/** A handler body that records what its catch block saw (nothing, when the engine is right). */
const watched =
  <T>(body: (ctx: Context) => Promise<T>) =>
  async (ctx: Context): Promise<T> => {
    try {
      return await body(ctx);
    } catch (err) {
      caught.push(`${ctx.invocationId}: ${String(err)}`);
      throw err;
    }
  };
const gatedStep = async <T>(v: T): Promise<T> => {
  entered.open();
  await gate.opened;
  return v;
};
const spec = { input: z.object({}), output: z.string() };

const Lossy = defineService('lossy', {
  /** The lease is lost while a step's body runs. */
  inStep: handler(
    spec,
    watched(async (ctx) => {
      await ctx.run('slow', () => gatedStep(1));
      return ctx.run('after', body('after', 'ok'));
    }),
  ),
  /** The lease is lost between steps, while the handler awaits something of its own. */
  between: handler(
    spec,
    watched(async (ctx) => {
      await ctx.run('first', () => 1);
      await gatedStep(null);
      passedGate++;
      return ctx.run('second', body('second', 'ok'));
    }),
  ),
  /** The lease is lost under combinators: a step raced against a durable timer, beside a sleep. */
  combined: handler(
    spec,
    watched(async (ctx) => {
      const gated = ctx.run('gated', () => gatedStep('ok'));
      const [v] = await ctx.all([gated.orTimeout(60_000), ctx.sleep('beside', 10)]);
      return ctx.run('last', body('last', v));
    }),
  ),
});

// A long lease: the only takeover is the one a test makes (under a loaded machine a short
// lease also lapses on its own, and a step then rightly runs again).
/** The engine's log lines: a stale execution's refused write is logged (at debug). */
const logLines: string[] = [];
const registry = new Registry();
const engine = testEngine(db.sql, {
  registry,
  workerId: 'lossy',
  leaseMs: 10_000,
  pollMs: 50,
  stealAfterMs: 0,
  logger: pino({ level: 'debug' }, { write: (l: string) => void logLines.push(l) }),
});
engine.register(Lossy);
await engine.start();

/** What another replica's claim does to the row: a new epoch, owned elsewhere, lease due. */
async function takeOver(id: string): Promise<void> {
  await db.sql`UPDATE engine_invocations SET lease_epoch = lease_epoch + 1, lease_owner = 'elsewhere', due_at = now() WHERE id = ${id}`;
}

/**
 * Runs `name` until its latch, lets another owner take it over, waits until this engine claimed
 * it again and the new execution reached the latch (its launch dropped the stale one before
 * it started), then opens the gate for both: the invocation must finish on the new lease, and
 * once the stale execution has met its lost lease (`staleActed`), nothing was caught.
 */
async function lostUnder(name: 'inStep' | 'between' | 'combined', staleActed: (id: string) => boolean): Promise<void> {
  caught.length = 0;
  entered = latch();
  gate = latch();
  const { id } = await engine.send(Lossy, name, {});
  await entered.opened;
  entered = latch();
  await takeOver(id);
  await withDeadline(entered.opened, 'the new execution');
  gate.open();
  assert.equal(await withDeadline(engine.result(id), 'the invocation'), 'ok');
  // Positive evidence that the stale execution met its lost lease before the check below.
  await waitFor('the stale execution acted', async () => staleActed(id));
  assert.deepEqual(caught, [], 'no LeaseLostError reached the handler');
}

/** engine_leases_lost_total now. */
const leasesLost = async () => (await registry.getSingleMetric('engine_leases_lost_total')!.get()).values[0]!.value;

const writeRefused = (id: string) => logLines.some((l) => l.includes(id) && l.includes('engine write refused'));

test('a lease lost while a step runs reaches no handler code; the invocation finishes on a new lease', async () => {
  const before = await leasesLost();
  await lostUnder('inStep', writeRefused);
  // The execution was running: one lease lost, counted once however the stale copy learnt of it.
  assert.equal(await leasesLost(), before + 1);
  assert.equal(ran.get('after'), 1);
});

test('a lease lost while the handler awaits between steps: its next step neither throws nor runs', async () => {
  // The stale execution asks for 'second' on an execution that was dropped.
  passedGate = 0;
  const before = await leasesLost();
  await lostUnder('between', () => passedGate === 2);
  assert.equal(await leasesLost(), before + 1);
  assert.equal(ran.get('second'), 1, 'the stale execution did not run the step');
});

test('a lease lost under all() and orTimeout() reaches no handler code', async () => {
  await lostUnder('combined', writeRefused);
  assert.equal(ran.get('last'), 1);
});

test('a lease lost and learnt only from a refused write is counted once', async () => {
  caught.length = 0;
  entered = latch();
  gate = latch();
  const before = await leasesLost();
  const { id } = await engine.send(Lossy, 'inStep', {});
  await entered.opened;
  // Taken over with no notice and no re-claim due here: the stale step's write is what tells.
  await db.sql`UPDATE engine_invocations SET lease_epoch = lease_epoch + 1, lease_owner = 'elsewhere', due_at = now() + interval '1 hour' WHERE id = ${id}`;
  gate.open();
  await waitFor('the stale write refused', async () => writeRefused(id));
  assert.equal(await leasesLost(), before + 1);
  // Due again: this engine claims it afresh and finishes it, and nothing more is counted.
  entered = latch();
  gate = latch();
  gate.open();
  await db.sql`UPDATE engine_invocations SET due_at = now() WHERE id = ${id}`;
  assert.equal(await withDeadline(engine.result(id), 'the invocation'), 'ok');
  assert.equal(await leasesLost(), before + 1);
  assert.deepEqual(caught, [], 'no LeaseLostError reached the handler');
});
