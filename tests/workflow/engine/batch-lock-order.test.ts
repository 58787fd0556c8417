// A start batch and a finish batch in flight together (group-commit.ts runs up to maxInFlight
// of them) both lock engine_object_keys rows: an exclusive start through its INSERT … ON
// CONFLICT on the key, an exclusive finish FOR UPDATE before it hands the key on. Locked in two
// different orders (starts by key, finishes by parent and then id), the batches can each hold a
// key the other waits for: PostgreSQL breaks the cycle after deadlock_timeout (1 s) with 40P01,
// and the members are sent again one by one, a stall long enough to let 1 s leases lapse
// (docs/benchmarks.md). The order is made to happen: test-only triggers stop each batch just
// after it took its first key (the finish at its first member's row update, the start at its
// first key's update), on an advisory lock the test holds; then the test lets both go at once,
// so each asks for its second key while the other holds it, unless the batches lock keys in
// one order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../../helpers/db';
import { until } from '../../helpers/wait';
import { finishMany, startMany } from '../../../src/workflow/engine/batch-store';
import type { StartArgs } from '../../../src/workflow/engine/invocation-store';

const { sql } = await testDb();

const start = (id: string, key: string, worker: string | null): StartArgs => ({
  id,
  service: 'lockorder',
  handler: 'h',
  key,
  kind: 'exclusive',
  input: {},
  idempotencyKey: null,
  delayMs: null,
  worker,
  leaseMs: 60_000,
});

/** Sessions of this database waiting for a lock (a row lock shows as a wait on a transaction). */
const lockWaiters = async () =>
  (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)[0]!.n;

test('a finish batch and a start batch on the same two keys, released together, do not deadlock', async () => {
  // Running holders of k1 and k2; by id (the finish order of top-level invocations) the holder
  // of k2 comes first, so a finish batch meets k2 before k1 while starts go k1 then k2.
  const held = await startMany(sql, [start('inv-a-on-k2', 'k2', 'w'), start('inv-b-on-k1', 'k1', 'w')]);
  assert.deepEqual(held.map((r) => r.status), ['running', 'running']);
  // Shared, so both pass together once the test's exclusive hold ends.
  await sql.unsafe(`
    CREATE FUNCTION test_gate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock_shared(4343); RETURN NEW; END $$;
    CREATE TRIGGER test_gate_finish BEFORE UPDATE ON engine_invocations
      FOR EACH ROW WHEN (OLD.id = 'inv-a-on-k2') EXECUTE FUNCTION test_gate();
    CREATE TRIGGER test_gate_start BEFORE UPDATE ON engine_object_keys
      FOR EACH ROW WHEN (OLD.service = 'lockorder' AND OLD.object_key = 'k1') EXECUTE FUNCTION test_gate();`);
  const blocker = await sql.reserve();
  try {
    await blocker`BEGIN`;
    await blocker`SET LOCAL idle_in_transaction_session_timeout = '60s'`;
    await blocker`SELECT pg_advisory_xact_lock(4343)`;
    const finishing = finishMany(sql, [
      { id: 'inv-b-on-k1', epoch: held[1]!.epoch!, status: 'completed', result: '{}', error: null, worker: 'w', leaseMs: 60_000 },
      { id: 'inv-a-on-k2', epoch: held[0]!.epoch!, status: 'completed', result: '{}', error: null, worker: 'w', leaseMs: 60_000 },
    ]);
    const starting = startMany(sql, [start('inv-c-on-k2', 'k2', null), start('inv-d-on-k1', 'k1', null)]);
    await until(async () => (await lockWaiters()) === 2, 30_000, 'both batches stopped');
    await blocker`COMMIT`;
    const [f, s] = await Promise.allSettled([finishing, starting]);
    for (const r of [f, s]) if (r.status === 'rejected') assert.notEqual((r.reason as { code?: string }).code, '40P01', `deadlock: ${String(r.reason)}`);
    assert.equal(f.status, 'fulfilled', f.status === 'rejected' ? String(f.reason) : '');
    assert.equal(s.status, 'fulfilled', s.status === 'rejected' ? String(s.reason) : '');
    assert.deepEqual(f.value.map((r) => r.ok), [true, true]);
    // Each key went on to the new start on it, whichever batch came first: queued behind the
    // holder and handed the key (claimed for the finishing worker), or started on a free key.
    const rows = await sql<{ id: string; status: string }[]>`SELECT id, status FROM engine_invocations WHERE service = 'lockorder' ORDER BY id`;
    assert.deepEqual(rows.map((r) => r.id), ['inv-a-on-k2', 'inv-b-on-k1', 'inv-c-on-k2', 'inv-d-on-k1']);
    assert.deepEqual(rows.slice(0, 2).map((r) => r.status), ['completed', 'completed']);
    for (const r of rows.slice(2)) assert.ok(r.status === 'running' || r.status === 'ready', `${r.id} ${r.status}: not handed its key`);
  } finally {
    await blocker`ROLLBACK`.catch(() => {});
    blocker.release();
  }
});
