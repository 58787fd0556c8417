// Database faults under running invocations, on a PostgreSQL of this file's own that the tests
// stop and start: an outage longer than the lease, terminated connections, and one replica cut
// off from the database while another carries on. Infrastructure errors must never reach
// handler code, never count as a step's attempt, and every step must run once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../../helpers/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import postgres from 'postgres';
import { z } from 'zod';
import { startPostgres, type PgServer } from '../../helpers/postgres';
import { createDb, migrate, type Sql } from '../../../src/store';
import { createRegistry } from '../../../src/http/metrics';
import { defineService, handler, type Engine } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';
import { faultProxy } from './fault-proxy';

/** Longer than every lease below, so leases lapse while the database is away. */
const LEASE_MS = 1_000;
const OUTAGE_MS = 2_500;

const dir = mkdtempSync(join(tmpdir(), 'unkey-infra-outage-'));
let pg: PgServer = await startPostgres({ dir, keepDir: true });
const port = pg.port;
after(async () => {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
});
const admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe('CREATE DATABASE outage');
await admin.end();
const url = pg.urlFor('outage');
const sql: Sql = createDb(url, { max: 10, applicationName: 'engine-outage' });
after(() => sql.end({ timeout: 1 }));
await migrate(sql);
await sql`CREATE TABLE fx_rows (invocation_id text NOT NULL, step text NOT NULL, worker text NOT NULL)`;

async function restartPostgres(): Promise<void> {
  pg = await startPostgres({ dir, keepDir: true, port });
}

/** Errors that reached handler code, and completed step bodies by invocation and step. */
const seen: string[] = [];
const completed = new Map<string, number>();
const complete = (id: string, step: string) => completed.set(`${id}/${step}`, (completed.get(`${id}/${step}`) ?? 0) + 1);
const countOf = (id: string, step: string) => completed.get(`${id}/${step}`) ?? 0;

function latch() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}
let enteredC = latch();
let gateC = latch();
let enteredHold = latch();
let slowReads = 0;

async function rows(id: string, step: string): Promise<number> {
  const [r] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM fx_rows WHERE invocation_id = ${id} AND step = ${step}`;
  return r!.n;
}

/** One definition per engine: the same service, with step bodies that record who ran them.
 *  `service` names it: an engine only claims invocations of services it registered. */
function faultDefs(db: Sql, worker: string, service = 'faults') {
  const insert = (id: string, step: string) => async (tx: postgres.TransactionSql<Record<string, unknown>>) => {
    await tx`INSERT INTO fx_rows (invocation_id, step, worker) VALUES (${id}, ${step}, ${worker})`;
    return worker;
  };
  return defineService(service, {
    journey: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
      const id = ctx.invocationId;
      try {
        await ctx.run('a', () => complete(id, 'a'));
        await ctx.runTx('b', insert(id, 'b'));
        // A step that reads the database itself (like the deploy's 'load'), allowed one
        // attempt only: an outage while it runs must not count as that attempt.
        await ctx.run(
          'c',
          async () => {
            enteredC.open();
            await gateC.opened;
            await db`SELECT 1`;
            complete(id, 'c');
          },
          { maxAttempts: 1 },
        );
        await ctx.runTx('d', insert(id, 'd'));
        await ctx.sleep('nap', 100);
        await ctx.run('e', () => complete(id, 'e'));
        return 'done';
      } catch (err) {
        seen.push(`${id}: ${String(err)}`);
        throw err;
      }
    }),
    sleeper: handler({ input: z.object({ ms: z.number() }), output: z.string() }, async (ctx, { ms }) => {
      const id = ctx.invocationId;
      try {
        await ctx.run('before', () => complete(id, 'before'));
        await ctx.sleep('nap', ms);
        await ctx.run('after', () => complete(id, 'after'));
        return 'woke';
      } catch (err) {
        seen.push(`${id}: ${String(err)}`);
        throw err;
      }
    }),
    holder: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
      const id = ctx.invocationId;
      try {
        // A long database read inside a step, one attempt allowed, whose connection is
        // terminated while the statement runs.
        await ctx.run(
          'slow-read',
          async () => {
            enteredHold.open();
            await db`SELECT pg_sleep(${slowReads++ === 0 ? 30 : 0})`;
            complete(id, 'slow-read');
          },
          { maxAttempts: 1 },
        );
        await ctx.runTx('after', insert(id, 'after'));
        return 'held';
      } catch (err) {
        seen.push(`${id}: ${String(err)}`);
        throw err;
      }
    }),
    fenced: handler({ input: z.object({}), output: z.string() }, async (ctx) => {
      const id = ctx.invocationId;
      await ctx.runTx('one', insert(id, 'one'));
      const two = await ctx.run('two', async () => {
        if (worker === 'fa') {
          enteredC.open();
          await gateC.opened;
        }
        complete(id, `two-${worker}`);
        return worker;
      });
      await ctx.runTx('three', insert(id, 'three'));
      return two;
    }),
  });
}

function engineOn(
  db: Sql,
  workerId: string,
  registry?: ReturnType<typeof createRegistry>,
  service?: string,
): { engine: Engine; def: ReturnType<typeof faultDefs> } {
  const e = testEngine(db, { workerId, leaseMs: LEASE_MS, pollMs: 100, stealAfterMs: 200, ...(registry ? { registry } : {}) });
  return { engine: e, def: e.register(faultDefs(db, workerId, service)) };
}

const { engine, def: Faults } = engineOn(sql, 'outage');
await engine.start();

test('a Postgres outage longer than the lease, mid-invocation and under a sleeping one, is waited out; each step runs once', async () => {
  seen.length = 0;
  enteredC = latch();
  gateC = latch();
  const sleeping = await engine.send(Faults, 'sleeper', { ms: 1_000 });
  await waitFor('sleeper suspended', async () => (await engine.getInvocation(sleeping.id)).status === 'suspended');
  const journey = engine.send(Faults, 'journey', {});
  await enteredC.opened;
  const { id } = await journey;
  await pg.stop();
  // Step c now reads the database and finds it gone; its journal write, the sleep's timer
  // and every lease renewal fail until the restart below.
  gateC.open();
  await delay(OUTAGE_MS);
  await restartPostgres();

  assert.equal(await engine.result(id), 'done');
  assert.equal(await engine.result(sleeping.id), 'woke');
  assert.deepEqual(seen, [], 'no infrastructure error reached handler code');
  for (const step of ['a', 'c', 'e']) assert.equal(countOf(id, step), 1, `step ${step} ran once`);
  for (const step of ['b', 'd']) assert.equal(await rows(id, step), 1, `database step ${step} committed once`);
  assert.equal(countOf(sleeping.id, 'before'), 1);
  assert.equal(countOf(sleeping.id, 'after'), 1);
  const inv = await engine.getInvocation(id);
  assert.deepEqual(inv.journal.map((j) => j.name), ['a', 'b', 'c', 'd', 'nap', 'e']);
  assertEvery(inv.journal, (j) => j.failure === null, 'no step was recorded as failed');
});

test('terminated connections (pg_terminate_backend) are waited out: a statement in flight and a sleeping invocation both finish, each step once', async () => {
  seen.length = 0;
  enteredHold = latch();
  const sleeping = await engine.send(Faults, 'sleeper', { ms: 3_000 });
  await waitFor('sleeper suspended', async () => (await engine.getInvocation(sleeping.id)).status === 'suspended');
  const { id } = await engine.send(Faults, 'holder', {});
  await enteredHold.opened;
  const killer = postgres(url, { max: 1, onnotice: () => {} });
  after(() => killer.end());
  // The LISTEN connection too: after the previous test's outage it may still be reconnecting
  // (a loaded CI machine once terminated only the read).
  await waitFor('the slow read running, LISTEN connected', async () => {
    const [r] = await killer<{ n: number; all: number }[]>`
      SELECT count(*) FILTER (WHERE query LIKE '%pg_sleep%' AND state = 'active')::int AS n, count(*)::int AS all
      FROM pg_stat_activity WHERE application_name = 'engine-outage'`;
    return r!.n === 1 && r!.all >= 2;
  });
  // Every connection of the engine: the running read, idle pool connections and LISTEN. (No
  // transaction is open at this point: postgres.js 3.4.9 crashes the process when a backend
  // in a transaction is terminated, porsager/postgres#1208.)
  const [k] = await killer<{ n: number }[]>`
    SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 'engine-outage'`;
  assert.ok(k!.n >= 2, `terminated ${k!.n} of the engine's connections (the read and LISTEN at least)`);
  assert.equal(await engine.result(id), 'held');
  // Once more while the sleeper waits, so its wake-up crosses a fresh set of connections.
  await killer`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'engine-outage'`;
  assert.equal(await engine.result(sleeping.id), 'woke');
  assert.deepEqual(seen, [], 'no infrastructure error reached handler code');
  assert.equal(countOf(id, 'slow-read'), 1);
  assert.equal(await rows(id, 'after'), 1, 'the database step committed once');
  assert.equal(countOf(sleeping.id, 'after'), 1);
});

test('a replica cut off from the database loses its lease to another, which finishes the work; the stale one writes nothing and its caller still gets the answer', async () => {
  // Only the two replicas of this test may take the invocation over: they serve a service of
  // their own, which the file's engine (still serving the other tests, in any order) never claims.
  enteredC = latch();
  gateC = latch();
  const proxy = await faultProxy(port);
  after(() => proxy.close());
  const viaProxy = createDb(`postgres://postgres:postgres@127.0.0.1:${proxy.port}/outage`, { max: 5, applicationName: 'engine-cut' });
  after(() => viaProxy.end({ timeout: 1 }));
  const registry = createRegistry();
  const { engine: a, def: FaultsA } = engineOn(viaProxy, 'fa', registry, 'faults-cut');
  const { engine: b } = engineOn(sql, 'fb', undefined, 'faults-cut');
  await a.start();
  await b.start();
  const call = a.call(FaultsA, 'fenced', {});
  await enteredC.opened;
  const [running] = await sql<{ id: string }[]>`SELECT id FROM engine_invocations WHERE handler = 'fenced' AND lease_owner = 'fa'`;
  const id = running!.id;
  proxy.cut();
  // fa's lease lapses; fb claims the invocation, replays step one and runs the rest.
  const done = await waitFor(
    'finished by fb',
    async () => {
      const v = await b.getInvocation(id);
      return v.status === 'completed' && v;
    },
    15_000,
  );
  assert.equal(done.result, 'fb');
  proxy.restore();
  gateC.open();
  // fa's step body finishes now; its journal write is fenced off, and it drops the execution.
  await waitFor('fa dropped its stale execution', async () => /engine_executions\{state="running"\} 0/.test(await registry.metrics()));
  assert.equal(await call, 'fb', "the caller on the cut-off replica got the other replica's answer");
  const inv = await b.getInvocation(id);
  assert.deepEqual(inv.journal.map((j) => [j.name, j.value]), [['one', 'fa'], ['two', 'fb'], ['three', 'fb']]);
  assert.equal(await rows(id, 'one'), 1);
  assert.equal(await rows(id, 'three'), 1);
  assert.equal(countOf(id, 'two-fa'), 1, 'the cut-off replica ran its step body (at least once is the contract)');
  await a.stop();
  await b.stop();
});
