// The PostgreSQL driver's transactions under a full pipeline (scripts/patch-postgres.mjs says
// what is patched and why). postgres.js 3.4.9 can write a transaction's BEGIN without reserving
// the connection: when the BEGIN fills the connection's pipeline (max_pipeline) or the socket's
// buffer. sql.begin then fails with UNSAFE_TRANSACTION while the server stays in the open
// transaction, and the connection goes back to the pool: unrelated statements run inside it
// and are never committed. Found by the 10,000-sentinel rollout (engine steps failing with
// UNSAFE_TRANSACTION). A small max_pipeline makes the boundary easy to reach; production's 100
// reaches it under load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { testDb } from '../helpers/db';

const db = await testDb();

test('transactions begun while every connection is busy are reserved, and none is left open', async () => {
  // max_pipeline is a driver option its type definitions leave out.
  const options = { max: 3, max_pipeline: 2, onnotice: () => {}, connection: { application_name: 'pg-driver-test' } };
  const sql = postgres(db.url, options);
  try {
    await sql`CREATE TABLE IF NOT EXISTS pipeline_probe (id int PRIMARY KEY)`;
    await sql`TRUNCATE pipeline_probe`;
    const failures: string[] = [];
    let next = 0;
    for (let round = 0; round < 10; round++) {
      // Every connection busy, then plain statements and transactions queued behind them, in
      // this order: a template query is sent on the next tick unless executed now, while
      // sql.begin sends its BEGIN at once.
      const busy = [0, 1, 2].map(() => sql`SELECT pg_sleep(0.05)`.execute());
      // One more statement on each: the next one written to a connection fills its pipeline.
      const plain = Array.from({ length: 3 }, () => sql`SELECT 1`.execute());
      const txs = Array.from({ length: 5 }, () => {
        const id = next++;
        return sql.begin(async (tx) => {
          await tx`INSERT INTO pipeline_probe (id) VALUES (${id})`;
        }).catch((err: Error) => void failures.push(err.message));
      });
      await Promise.all([...busy, ...plain, ...txs]);
    }
    assert.deepEqual(failures, [], 'every sql.begin ran as a transaction');
    // What the driver left behind: a session idle inside a transaction holds its writes back.
    const [open] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pg-driver-test' AND state LIKE 'idle in transaction%'`;
    assert.equal(open!.n, 0, 'no connection is left inside a transaction');
    const [rows] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pipeline_probe`;
    assert.equal(rows!.n, next, 'every committed insert is visible to another session');
  } finally {
    await sql.end({ timeout: 1 });
  }
});

// postgres.js 3.4.9 counts the rows of an answer in one variable per connection and resets it
// only when a statement completes. A statement that sends rows and then fails (a division by
// zero on the fourth row, a statement timeout, a refused value in a batch) never completes, so
// the next answer on that connection is written from where the failed one stopped: leading
// holes, a length that counts them, and no error. Found by the engine's group commit (a batch
// refused after its first rows); porsager/postgres#1119 upstream.
test('a statement that fails after sending rows leaves the next answer on its connection whole', async () => {
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    for (const pipelined of [false, true]) {
      // One connection: the second statement runs on the one the first failed on, after it
      // (sequential) or written behind it before its answer came (pipelined).
      const failing = sql`SELECT i, 1 / (4 - i) AS boom FROM generate_series(1, 10) i`.execute();
      const next = pipelined ? sql`SELECT x FROM generate_series(1, 5) x`.execute() : undefined;
      await assert.rejects(failing, /division by zero/);
      const rows = await (next ?? sql`SELECT x FROM generate_series(1, 5) x`);
      const what = pipelined ? 'pipelined' : 'sequential';
      assert.equal(rows.length, 5, `${what}: five rows, no holes before them`);
      assert.deepEqual([...rows].map((r) => r?.x), [1, 2, 3, 4, 5], `${what}: each row where it belongs`);
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
});
