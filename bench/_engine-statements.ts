// `node --import tsx bench/_engine-statements.ts`: what one engine step's statement costs alone,
// against a one-row commit, on a private PostgreSQL with default durability (fsync on), the
// engine's pool (20 connections) and a connection of its own (issue 38: is a step's time the
// statement or this process?). Two rounds of 300 each: a round trip with no commit (SELECT 1),
// a one-row INSERT, and the journal INSERT a ctx.run step sends, with and without its fence
// (FOR KEY SHARE on the invocation row). Not part of `npm run bench`: a probe, not a headline.
// Prints one JSON object on the last line of stdout.
import postgres from 'postgres';
import { startPostgres } from '../tests/helpers/postgres';
import { createDb, migrate } from '../src/store';
import { pct } from './_engine-shapes';

const RUNS = 300;
const server = await startPostgres({ durable: true });
const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe('CREATE DATABASE statements');
await admin.end();
const pool = createDb(server.urlFor('statements'), { max: 20 });
await migrate(pool);
const one = postgres(server.urlFor('statements'), { max: 1, onnotice: () => {} });
await one`CREATE TABLE IF NOT EXISTS bench_commit (id serial PRIMARY KEY, at timestamptz DEFAULT now())`;
const id = 'inv-statements';
await pool`INSERT INTO engine_invocations (id, service, handler, kind, status, lease_epoch, input)
           VALUES (${id}, 'bench', 'ten', 'service', 'running', 1, '{}'::jsonb)`;

async function p50(f: () => PromiseLike<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await f();
    xs.push(performance.now() - t0);
  }
  return pct(xs, 50);
}

let seq = 0;
const rounds: Record<string, number>[] = [];
// The private PostgreSQL is stopped whatever happens: left running, it would load the machine.
try {
  for (let r = 0; r < 2; r++) rounds.push(await round());
} finally {
  await pool.end();
  await one.end();
  await server.stop();
}
console.log(JSON.stringify({ bench: 'engine-statements', runs: RUNS, postgres: 'embedded, default durability (fsync on)', rounds }));

async function round(): Promise<Record<string, number>> {
  return {
    selectOnePoolMs: await p50(() => pool`SELECT 1`),
    oneRowCommitOwnConnectionMs: await p50(() => one`INSERT INTO bench_commit DEFAULT VALUES`),
    oneRowCommitPoolMs: await p50(() => pool`INSERT INTO bench_commit DEFAULT VALUES`),
    // The statement journal-store.ts's journalDone sends for a lone step.
    journalFencedMs: await p50(() => pool`
      WITH f AS (SELECT 1 FROM engine_invocations WHERE id = ${id} AND lease_epoch = 1 AND status = 'running' FOR KEY SHARE)
      INSERT INTO engine_journal (invocation_id, seq, kind, name, status, value, failure, completed_at)
      SELECT ${id}, ${++seq}::int, 'run', 'step', 'done', ${'{"v":1}'}::text::jsonb, NULL, now() FROM f
      ON CONFLICT (invocation_id, seq) DO NOTHING RETURNING seq`),
    journalUnfencedMs: await p50(() => pool`
      INSERT INTO engine_journal (invocation_id, seq, kind, name, status, value, failure, completed_at)
      VALUES (${id}, ${++seq}::int, 'run', 'step', 'done', ${'{"v":1}'}::text::jsonb, NULL, now())
      ON CONFLICT (invocation_id, seq) DO NOTHING RETURNING seq`),
  };
}
