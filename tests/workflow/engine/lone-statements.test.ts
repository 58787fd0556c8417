// A lone invocation's statements (issue 38): a group commit with one member sends the
// single-row statement, and a start without an idempotency key opens no subtransaction. Each
// must answer as the batched statement did: a stale or gone lease refused, a taken position
// refused, an exclusive finish handing its key on; an idempotency key still deduplicated.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../../helpers/db';
import { EngineBatches } from '../../../src/workflow/engine/batches';
import { startInvocation, type StartArgs } from '../../../src/workflow/engine/invocation-store';

const db = await testDb();

async function runningRow(id: string, epoch: number): Promise<void> {
  await db.sql`
    INSERT INTO engine_invocations (id, service, handler, kind, input, status, lease_owner, lease_epoch, due_at)
    VALUES (${id}, 'lone', 'h', 'service', '{}', 'running', 'w', ${epoch}, now() + interval '1 hour')`;
}

const start = (id: string, o: Partial<StartArgs> = {}): StartArgs => ({
  id,
  service: 'lone',
  handler: 'h',
  key: null,
  kind: 'service',
  input: {},
  idempotencyKey: null,
  delayMs: null,
  worker: 'w',
  leaseMs: 60_000,
  ...o,
});

test('a start without an idempotency key whose id is taken is an error, not a dedupe with no id', async () => {
  assert.equal((await startInvocation(db.sql, start('inv-lone-dup'))).status, 'running');
  await assert.rejects(startInvocation(db.sql, start('inv-lone-dup')), (err: { code?: string }) => err.code === '23505');
  const rows = await db.sql<{ id: string }[]>`SELECT id FROM engine_invocations WHERE id = 'inv-lone-dup'`;
  assert.equal(rows.length, 1);
});

test('a start with an idempotency key still answers the first invocation, sent alone or in a batch', async () => {
  const batches = new EngineBatches(db.sql);
  const first = await batches.starts.submit(start('inv-lone-idem-1', { idempotencyKey: 'k1', worker: null }));
  assert.deepEqual([first.id, first.deduped, first.status], ['inv-lone-idem-1', false, 'ready']);
  const again = await batches.starts.submit(start('inv-lone-idem-2', { idempotencyKey: 'k1', worker: null }));
  assert.deepEqual([again.id, again.deduped], ['inv-lone-idem-1', true]);
  const both = await Promise.all([
    batches.starts.submit(start('inv-lone-idem-3', { idempotencyKey: 'k2', worker: null })),
    batches.starts.submit(start('inv-lone-idem-4', { idempotencyKey: 'k2', worker: null })),
  ]);
  assert.deepEqual(both.map((r) => [r.id, r.deduped]), [['inv-lone-idem-3', false], ['inv-lone-idem-3', true]]);
});

test('a lone journal write is fenced as a batched one: the current lease writes, a stale or unknown epoch and a taken position are refused', async () => {
  await runningRow('inv-lone-j', 2);
  const batches = new EngineBatches(db.sql);
  const w = (epoch: number, seq: number) => batches.journal.submit({ invocationId: 'inv-lone-j', epoch, seq, kind: 'run', name: `s${seq}`, value: '{"v":1}', failure: null });
  assert.equal(await w(1, 1), false, 'stale epoch');
  assert.equal(await w(2, 1), true);
  assert.equal(await w(2, 1), false, 'position taken');
  assert.equal(await w(7, 2), false, 'an epoch it never had');
  assert.equal(await batches.journal.submit({ invocationId: 'inv-lone-none', epoch: 1, seq: 1, kind: 'run', name: 's1', value: '{"v":1}', failure: null }), false);
  const rows = await db.sql<{ seq: number }[]>`SELECT seq FROM engine_journal WHERE invocation_id = 'inv-lone-j'`;
  assert.deepEqual(rows.map((r) => r.seq), [1]);
  assert.equal(batches.journal.statements, 5, 'each went alone');
});

test('a lone finish is fenced, and an exclusive one hands its key to the next invocation', async () => {
  const batches = new EngineBatches(db.sql);
  const keyed = (id: string) => start(id, { service: 'loneobj', key: 'k', kind: 'exclusive' });
  const a = await batches.starts.submit(keyed('inv-lone-fa'));
  const b = await batches.starts.submit(keyed('inv-lone-fb'));
  assert.deepEqual([a.status, b.status], ['running', 'queued']);
  const finish = (epoch: number) => batches.finishes.submit({ id: 'inv-lone-fa', epoch, status: 'completed', result: '{"v":1}', error: null, worker: 'w', leaseMs: 60_000 });
  assert.equal((await finish(2)).ok, false, 'stale epoch');
  const done = await finish(1);
  assert.equal(done.ok, true);
  assert.equal(done.next?.id, 'inv-lone-fb');
  assert.equal(done.next?.epoch, 1, 'claimed for the worker');
  assert.equal((await finish(1)).ok, false, 'finished already');
});
