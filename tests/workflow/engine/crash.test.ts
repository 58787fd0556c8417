// Crash and multi-process behaviour with real engine processes (fixtures/worker.ts) on one
// database: SIGKILL mid-invocation, timers across a restart, and two workers sharing work.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testDb } from '../../helpers/db';
import { FX_SCHEMA, fixtureDefs } from './fixtures/defs';
import { testEngine, waitFor } from './helpers';

const WORKER = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url));

const db = await testDb();
await db.sql.unsafe(FX_SCHEMA);
// Not started: only used as a client (send, reads), so every invocation runs in a child.
const client = testEngine(db.sql);
const Fx = client.register(fixtureDefs(db.sql, 'test', null));

const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

function startWorker(workerId: string, hangAt?: number): Promise<{ child: ChildProcess; lines: string[]; waitLine: (l: string) => Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, db.url, workerId, ...(hangAt ? [String(hangAt)] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  const lines: string[] = [];
  const listeners = new Set<() => void>();
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
      for (const l of listeners) l();
    }
  });
  const waitLine = (line: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (lines.includes(line)) {
          listeners.delete(check);
          resolve();
        }
      };
      listeners.add(check);
      child.once('exit', (code) => reject(new Error(`worker ${workerId} exited (${code}) before "${line}"`)));
      check();
    });
  return waitLine('ready').then(() => ({ child, lines, waitLine }));
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

async function effects(invocationId: string): Promise<Map<string, number>> {
  const rows = await db.sql<{ step: string; n: number }[]>`
    SELECT step, count(*)::int AS n FROM fx_effects WHERE invocation_id = ${invocationId} GROUP BY step`;
  return new Map(rows.map((r) => [r.step, r.n]));
}

test('a 10-step invocation killed after step 4 resumes in a fresh process without repeating steps 1-4', async () => {
  const a = await startWorker('crash-a', 5);
  const { id } = await client.send(Fx, 'tenSteps', { start: 100 });
  await a.waitLine('hanging at 5');
  await kill(a.child);
  const before = await effects(id);
  assert.deepEqual([...before.keys()].sort(), ['step-1', 'step-2', 'step-3', 'step-4']);

  const b = await startWorker('crash-b');
  const inv = await waitFor('completion', async () => {
    const v = await client.getInvocation(id);
    return v.status === 'completed' && v;
  });
  assert.equal(inv.result, 100 + 55);
  const after = await effects(id);
  for (let i = 1; i <= 10; i++) assert.equal(after.get(`step-${i}`), 1, `step-${i} ran once`);
  assert.equal(inv.journal.length, 10);
  const [w] = await db.sql<{ worker: string }[]>`SELECT worker FROM fx_effects WHERE invocation_id = ${id} AND step = 'step-10'`;
  assert.equal(w!.worker, 'crash-b');
  await kill(b.child);
});

test('database steps commit exactly once across a crash in the middle of one', async () => {
  const a = await startWorker('tx-a', 3);
  const { id } = await client.send(Fx, 'txSteps', { steps: 5 });
  await a.waitLine('hanging in tx 3');
  await kill(a.child);
  const b = await startWorker('tx-b');
  assert.equal(await waitFor('completion', async () => {
    const v = await client.getInvocation(id);
    return v.status === 'completed' && (v.result as number);
  }), 5);
  const rows = await db.sql<{ step: string; n: number }[]>`
    SELECT step, count(*)::int AS n FROM fx_tx_rows WHERE invocation_id = ${id} GROUP BY step ORDER BY step`;
  assert.deepEqual(rows.map((r) => [r.step, r.n]), [['tx-1', 1], ['tx-2', 1], ['tx-3', 1], ['tx-4', 1], ['tx-5', 1]]);
  await kill(b.child);
});

test('a durable sleep survives a restart and fires once, never early, in the new process', async () => {
  const a = await startWorker('sleep-a');
  const { id } = await client.send(Fx, 'napper', { ms: 1_500 });
  await waitFor('suspension', async () => (await client.getInvocation(id)).status === 'suspended');
  await kill(a.child);
  const b = await startWorker('sleep-b');
  const inv = await waitFor('completion', async () => {
    const v = await client.getInvocation(id);
    return v.status === 'completed' && v;
  });
  // How late it fired is a benchmark's question (bench/engine.ts), not a test's.
  const fx = await db.sql<{ step: string; worker: string; atMs: number }[]>`
    SELECT step, worker, at_ms FROM fx_effects WHERE invocation_id = ${id} ORDER BY at_ms`;
  assert.deepEqual(fx.map((f) => [f.step, f.worker]), [['before', 'sleep-a'], ['after', 'sleep-b']], 'each step once; the timer fired in the new process');
  const wakeAt = (inv.result as { wakeAt: number }).wakeAt;
  assert.ok(fx[1]!.atMs >= wakeAt - 5, `fired ${wakeAt - fx[1]!.atMs} ms early`);
  assert.deepEqual(inv.journal.map((j) => [j.kind, j.name, j.status]), [['run', 'before', 'done'], ['sleep', 'nap', 'done'], ['run', 'after', 'done']]);
  await kill(b.child);
});

test('two engine processes split 1,000 invocations and run none twice', async () => {
  const [a, b] = await Promise.all([startWorker('split-a'), startWorker('split-b')]);
  const ids: string[] = [];
  for (let i = 0; i < 1_000; i += 50) {
    const batch = await Promise.all(Array.from({ length: 50 }, (_, j) => client.send(Fx, 'once', { i: i + j })));
    ids.push(...batch.map((r) => r.id));
  }
  await waitFor(
    'all completed',
    async () => {
      const [r] = await db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM engine_invocations WHERE service = 'fx' AND handler = 'once' AND status = 'completed'`;
      return r!.n === 1_000;
    },
    60_000,
  );
  const rows = await db.sql<{ invocationId: string; n: number; workers: string[] }[]>`
    SELECT invocation_id, count(*)::int AS n, array_agg(DISTINCT worker) AS workers
      FROM fx_effects WHERE invocation_id = ANY(${ids}::text[]) GROUP BY invocation_id`;
  assert.equal(rows.length, 1_000);
  assert.ok(rows.every((r) => r.n === 1), 'every invocation ran its step exactly once');
  const byWorker = new Map<string, number>();
  for (const r of rows) byWorker.set(r.workers[0]!, (byWorker.get(r.workers[0]!) ?? 0) + 1);
  assert.ok((byWorker.get('split-a') ?? 0) > 0 && (byWorker.get('split-b') ?? 0) > 0, `both workers ran some: ${[...byWorker]}`);
  const [att] = await db.sql<{ max: number }[]>`
    SELECT max(attempts)::int AS max FROM engine_invocations WHERE id = ANY(${ids}::text[])`;
  assert.equal(att!.max, 1, 'no invocation was claimed twice');
  await Promise.all([kill(a.child), kill(b.child)]);
});
