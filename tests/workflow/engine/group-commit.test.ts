// Group commit (src/workflow/engine/group-commit.ts): the steps, starts and finishes of
// concurrent executions share statements, and each member must still be answered as if it had
// been sent alone: a stale member refused beside the current one, one member's bad value or
// raised error failing that member only, an answer lost after a batch committed recognised by
// every member, and a process killed with batches in flight losing nothing that had committed.
// A lone request leaves at once (not an event-loop turn later), while the requests of one turn
// still share a statement.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { createDb, type Sql } from '../../../src/store/db';
import { defineService, handler } from '../../../src/workflow/engine';
import { journalDoneMany, startMany, type DoneWrite } from '../../../src/workflow/engine/batch-store';
import { GroupCommit } from '../../../src/workflow/engine/group-commit';
import { renewLeases, type StartArgs } from '../../../src/workflow/engine/invocation-store';
import { FX_SCHEMA, fixtureDefs } from './fixtures/defs';
import { testEngine, waitFor, withDeadline } from './helpers';

const db = await testDb();
await db.sql.unsafe(FX_SCHEMA);

/** A running invocation row held under `epoch`, as a claim leaves it. */
async function runningRow(id: string, epoch: number): Promise<void> {
  await db.sql`
    INSERT INTO engine_invocations (id, service, handler, kind, input, status, lease_owner, lease_epoch, due_at)
    VALUES (${id}, 'gc', 'h', 'service', '{}', 'running', 'w', ${epoch}, now() + interval '1 hour')`;
}

const entry = (invocationId: string, epoch: number, seq: number, value = '{"v":1}'): DoneWrite => ({
  invocationId,
  epoch,
  seq,
  kind: 'run',
  name: `s${seq}`,
  value,
  failure: null,
});

async function journalOf(id: string): Promise<number[]> {
  const rows = await db.sql<{ seq: number }[]>`SELECT seq FROM engine_journal WHERE invocation_id = ${id} ORDER BY seq`;
  return rows.map((r) => r.seq);
}

test('one statement answers each member alone: a stale write beside the current one at the same position, a lease that is gone, a position taken', async () => {
  await runningRow('inv-gc-a', 2);
  await runningRow('inv-gc-b', 1);
  await runningRow('inv-gc-c', 1);
  await db.sql`INSERT INTO engine_journal (invocation_id, seq, kind, name, status) VALUES ('inv-gc-c', 1, 'run', 's1', 'done')`;
  const answers = await journalDoneMany(db.sql, [
    entry('inv-gc-a', 1, 1), // stale: the lease moved to epoch 2
    entry('inv-gc-a', 2, 1), // the current owner, same position
    entry('inv-gc-b', 1, 1),
    entry('inv-gc-b', 7, 2), // an epoch it never had
    entry('inv-gc-c', 1, 1), // already written
    entry('inv-gc-c', 1, 2),
  ]);
  assert.deepEqual(answers, [false, true, true, false, false, true]);
  assert.deepEqual(await journalOf('inv-gc-a'), [1]);
  assert.deepEqual(await journalOf('inv-gc-b'), [1]);
  assert.deepEqual(await journalOf('inv-gc-c'), [1, 2]);
});

test('a value the database refuses fails that member alone; the others of its batch commit', async () => {
  for (const id of ['inv-gc-d', 'inv-gc-e', 'inv-gc-f']) await runningRow(id, 1);
  const batch = new GroupCommit((members: readonly DoneWrite[]) => journalDoneMany(db.sql, members));
  // Submitted in one turn, so they share the first statement. jsonb takes no \u0000.
  const [d, e, f] = await Promise.allSettled([
    batch.submit(entry('inv-gc-d', 1, 1)),
    batch.submit(entry('inv-gc-e', 1, 1, '{"v":"a\\u0000b"}')),
    batch.submit(entry('inv-gc-f', 1, 1)),
  ]);
  assert.deepEqual(d, { status: 'fulfilled', value: true });
  assert.deepEqual(f, { status: 'fulfilled', value: true });
  assert.equal(e.status, 'rejected');
  assert.match(String((e as PromiseRejectedResult).reason), /unicode|\\u0000/i);
  assert.equal(batch.statements, 4, 'the batch, then each member alone');
  assert.deepEqual([await journalOf('inv-gc-d'), await journalOf('inv-gc-e'), await journalOf('inv-gc-f')], [[1], [], [1]]);
});

test("a start whose parent lost its lease fails alone; the batch's other starts happen, and the connection's next answer is whole", async () => {
  await runningRow('inv-gc-parent', 3);
  // One connection: the read below follows the failed batch on it. (A statement that failed
  // after sending rows left postgres.js counting them into the next answer: holes.)
  const one = createDb(db.url, { max: 1 });
  after(() => one.end({ timeout: 1 }));
  const batch = new GroupCommit((members: readonly StartArgs[]) => startMany(one, members), { maxBatch: 32 });
  const start = (id: string, parentEpoch: number): StartArgs => ({
    id,
    service: 'gc',
    handler: 'child',
    key: null,
    kind: 'service',
    input: { id },
    idempotencyKey: null,
    delayMs: null,
    worker: null,
    leaseMs: 1_000,
    parent: { id: 'inv-gc-parent', epoch: parentEpoch, seq: id === 'inv-gc-ok' ? 1 : 2, entry: 'send', name: 'gc/child' },
  });
  const [ok, lost] = await Promise.allSettled([batch.submit(start('inv-gc-ok', 3)), batch.submit(start('inv-gc-lost', 2))]);
  assert.equal(ok.status, 'fulfilled');
  assert.equal((ok as PromiseFulfilledResult<{ status: string }>).value.status, 'ready');
  assert.equal(lost.status, 'rejected');
  assert.equal((lost as PromiseRejectedResult).reason.code, 'UE001');
  const rows = await one<{ id: string }[]>`SELECT id FROM engine_invocations WHERE id IN ('inv-gc-ok', 'inv-gc-lost')`;
  assert.deepEqual(Array.from(rows, (r) => r.id), ['inv-gc-ok']);
});

test('a lease renewal does not wait for a row another statement holds (a finish in flight): both still held, the free one renewed', async () => {
  await runningRow('inv-gc-renew-a', 1);
  await runningRow('inv-gc-renew-b', 1);
  await db.sql`UPDATE engine_invocations SET due_at = now() WHERE id IN ('inv-gc-renew-a', 'inv-gc-renew-b')`;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let holding!: () => void;
  const held = new Promise<void>((r) => (holding = r));
  // A batch of finishes holding row a while it works through its other members.
  const finishing = db.sql.begin(async (tx) => {
    await tx`SELECT 1 FROM engine_invocations WHERE id = 'inv-gc-renew-a' FOR NO KEY UPDATE`;
    holding();
    await released;
  });
  await held;
  // Waiting on row a would keep the renewal until the transaction ends, which it only does
  // after the renewal answered (or the deadline gave up on it).
  const deadline = setTimeout(release, 10_000);
  const renewed = await renewLeases(db.sql, ['inv-gc-renew-a', 'inv-gc-renew-b'], [1, 1], 60_000);
  const stillOpen = !(await Promise.race([finishing.then(() => true), Promise.resolve(false)]));
  release();
  clearTimeout(deadline);
  await finishing;
  assert.ok(stillOpen, 'the renewal answered while the other transaction still held the row');
  assert.deepEqual([...renewed].sort(), ['inv-gc-renew-a', 'inv-gc-renew-b']);
  const rows = await db.sql<{ id: string; later: boolean }[]>`
    SELECT id, due_at > now() + interval '30 seconds' AS later FROM engine_invocations WHERE id IN ('inv-gc-renew-a', 'inv-gc-renew-b') ORDER BY id`;
  assert.deepEqual(Array.from(rows, (r) => [r.id, r.later]), [['inv-gc-renew-a', false], ['inv-gc-renew-b', true]]);
});

/** The pool, except that the first journal batch of two or more members commits and then
 *  loses its answer, as when the connection dies during COMMIT's reply. */
function answerLostOnce(sql: Sql): { sql: Sql; lost: () => number } {
  let lost = 0;
  const proxy = new Proxy(sql, {
    apply(target, self, args: [TemplateStringsArray, ...unknown[]]) {
      const text = Array.isArray(args[0]) ? args[0].join('?') : '';
      const doc = typeof args[1] === 'string' ? args[1] : '';
      if (lost === 0 && text.includes('INSERT INTO engine_journal') && text.includes('jsonb_to_recordset') && doc.split('"n":').length > 2) {
        lost++;
        return (Reflect.apply(target, self, args) as Promise<unknown>).then(() => {
          throw Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });
        });
      }
      return Reflect.apply(target, self, args);
    },
  });
  return { sql: proxy as Sql, lost: () => lost };
}

test('an answer lost after a batch committed: every member recognises its own entry and no step runs twice', async () => {
  const faulty = answerLostOnce(db.sql);
  const ran = new Map<string, number>();
  const Counted = defineService('gcCounted', {
    three: handler({ input: z.object({ n: z.number() }), output: z.number() }, async (ctx, { n }) => {
      let acc = n;
      for (let i = 1; i <= 3; i++) {
        acc = await ctx.run(`step-${i}`, () => {
          const k = `${ctx.invocationId}/${i}`;
          ran.set(k, (ran.get(k) ?? 0) + 1);
          return acc + i;
        });
      }
      return acc;
    }),
  });
  const engine = testEngine(faulty.sql, { leaseMs: 30_000 });
  engine.register(Counted);
  await engine.start();
  const results = await withDeadline(Promise.all(Array.from({ length: 10 }, (_, n) => engine.call(Counted, 'three', { n }))), 'the calls');
  assert.deepEqual(results, Array.from({ length: 10 }, (_, n) => n + 6));
  assert.equal(faulty.lost(), 1, 'one batch lost its answer');
  assert.equal(ran.size, 30);
  assert.ok([...ran.values()].every((v) => v === 1), `every step ran once: ${[...ran].filter(([, v]) => v !== 1)}`);
});

// ---- a process killed with batches in flight -------------------------------------------------

const WORKER = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url));
const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

function startWorker(workerId: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, db.url, workerId], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready\n')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`worker ${workerId} exited (${code}) before ready`)));
  });
}

test('a process killed while concurrent invocations share batches: a fresh one finishes all, and no step whose entry had committed runs again', async () => {
  const client = testEngine(db.sql);
  const Fx = client.register(fixtureDefs(db.sql, 'test', null));
  const a = await startWorker('gc-crash-a');
  const ids = (await Promise.all(Array.from({ length: 20 }, (_, i) => client.send(Fx, 'tenSteps', { start: i * 1_000 })))).map((r) => r.id);
  // Killed somewhere in the middle: wherever that is, the checks below hold.
  await waitFor('steps under way', async () => {
    const [r] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM fx_effects WHERE invocation_id = ANY(${ids}::text[])`;
    return r!.n >= 40;
  });
  await new Promise<void>((resolve) => {
    a.once('exit', () => resolve());
    a.kill('SIGKILL');
  });
  const committed = await db.sql<{ invocationId: string; name: string }[]>`
    SELECT invocation_id, name FROM engine_journal WHERE invocation_id = ANY(${ids}::text[])`;
  assert.ok(committed.length > 0, 'some entries had committed');
  const b = await startWorker('gc-crash-b');
  await waitFor(
    'all completed',
    async () => {
      const [r] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_invocations WHERE id = ANY(${ids}::text[]) AND status = 'completed'`;
      return r!.n === ids.length;
    },
    60_000,
  );
  const results = await db.sql<{ id: string; result: { v: number } }[]>`SELECT id, result FROM engine_invocations WHERE id = ANY(${ids}::text[])`;
  const starts = new Map(ids.map((id, i) => [id, i * 1_000]));
  for (const r of results) assert.equal(r.result.v, starts.get(r.id)! + 55, `result of ${r.id}`);
  const byWorker = await db.sql<{ invocationId: string; step: string; worker: string }[]>`
    SELECT invocation_id, step, worker FROM fx_effects WHERE invocation_id = ANY(${ids}::text[])`;
  for (const c of committed) {
    assert.ok(!byWorker.some((e) => e.invocationId === c.invocationId && e.step === c.name && e.worker === 'gc-crash-b'), `${c.invocationId} ${c.name} ran again`);
  }
  const journals = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_journal WHERE invocation_id = ANY(${ids}::text[]) GROUP BY invocation_id`;
  assert.equal(journals.length, ids.length);
  assert.ok(journals.every((j) => j.n === 10), 'every journal holds its ten steps once');
  b.kill('SIGKILL');
});

test('a lone request is sent at once when nothing is in flight, not after the next turn of the event loop', async () => {
  const sent: number[][] = [];
  const gc = new GroupCommit(async (members: readonly number[]) => (sent.push([...members]), members.map((m) => m * 2)));
  // Queued before the submit: a deferral by setImmediate would run after it.
  const seenAtImmediate = new Promise<number>((resolve) => setImmediate(() => resolve(sent.length)));
  const answer = gc.submit(1);
  assert.equal(await seenAtImmediate, 1);
  assert.equal(await answer, 2);
});

test('members that arrive in one turn share one statement, also the continuations one answer settles', async () => {
  const sent: number[][] = [];
  const gc = new GroupCommit(
    (members: readonly number[]) =>
      new Promise<number[]>((resolve) => {
        sent.push([...members]);
        // Answered from I/O, as a database answer is.
        setImmediate(() => resolve(members.map((m) => m)));
      }),
  );
  const chain = async (n: number) => {
    await gc.submit(n);
    // A few hops, as an execution's continuation takes before its next step.
    for (let i = 0; i < 5; i++) await null;
    await gc.submit(n + 10);
  };
  await Promise.all([chain(1), chain(2), chain(3)]);
  assert.deepEqual(sent, [[1, 2, 3], [11, 12, 13]]);
});
