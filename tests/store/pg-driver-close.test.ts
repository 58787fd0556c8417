// postgres.js when a transaction's connection closes under it (a backend terminated, a database
// failover): scripts/patch-postgres.mjs's second defect. The order is made exact: the test
// terminates the transaction's own backend and waits until the driver has seen the close
// before the transaction's callback goes on.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { testDb } from '../helpers/db';

const db = await testDb();
await db.sql`CREATE TABLE driver_close (n int)`;
const admin = postgres(db.url, { max: 1, onnotice: () => {} });
after(() => admin.end({ timeout: 1 }));

/** A pool of one connection whose closes the test can wait for. */
function pool() {
  let onClose: () => void = () => {};
  const sql = postgres(db.url, { max: 1, onnotice: () => {}, onclose: () => onClose() });
  after(() => sql.end({ timeout: 1 }));
  return { sql, closed: () => new Promise<void>((r) => (onClose = r)) };
}

test('a statement after the connection closed fails with CONNECTION_CLOSED; the process survives', { timeout: 60_000 }, async () => {
  const { sql, closed } = pool();
  let second: unknown;
  let finished: () => void = () => {};
  const callbackDone = new Promise<void>((r) => (finished = r));
  // begin() rejects at the close; its callback goes on, which is what is tested.
  await assert.rejects(
    sql.begin(async (tx) => {
      const pid = (await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`)[0]!.pid;
      const gone = closed();
      await admin`SELECT pg_terminate_backend(${pid})`;
      await gone;
      // Unpatched, this write found no socket, from a setImmediate: an uncaught TypeError.
      second = await tx`SELECT 1`.then(
        () => 'ran',
        (e: { code?: string }) => e.code,
      );
      finished();
    }),
  );
  await callbackDone;
  assert.equal(second, 'CONNECTION_CLOSED');
  // The pool carries on with a new session.
  assert.deepEqual([...(await sql`SELECT 2 AS n`)], [{ n: 2 }]);
});

test('once the pool reconnected, a late statement of the dead transaction does not run on the new session', { timeout: 60_000 }, async () => {
  const { sql, closed } = pool();
  let late: unknown;
  let finished: () => void = () => {};
  const callbackDone = new Promise<void>((r) => (finished = r));
  let resume: () => void = () => {};
  const paused = new Promise<void>((r) => (resume = r));
  let reached: () => void = () => {};
  const atPause = new Promise<void>((r) => (reached = r));
  const tx = sql
    .begin(async (t) => {
      const pid = (await t<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`)[0]!.pid;
      const gone = closed();
      await admin`SELECT pg_terminate_backend(${pid})`;
      await gone;
      reached();
      await paused;
      // Unpatched, this ran on the reconnected session outside any transaction and committed.
      late = await t`INSERT INTO driver_close VALUES (1)`.then(
        () => 'ran',
        (e: { code?: string }) => e.code,
      );
      finished();
    })
    .catch(() => undefined);
  // Another query makes the pool reconnect the same connection, then the dead one goes on.
  await atPause;
  assert.deepEqual([...(await sql`SELECT 3 AS n`)], [{ n: 3 }]);
  resume();
  await tx;
  await callbackDone;
  assert.equal(late, 'CONNECTION_CLOSED');
  assert.deepEqual([...(await db.sql`SELECT count(*)::int AS n FROM driver_close`)], [{ n: 0 }]);
  assert.deepEqual([...(await sql`SELECT 4 AS n`)], [{ n: 4 }], 'the pool still works');
});
