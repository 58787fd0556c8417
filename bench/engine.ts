// `npm run bench:engine`: the durable execution engine on its own embedded PostgreSQL.
// Same shapes as the Restate 1.7 / DBOS measurements in issue 3:
//   - a 10-step invocation, sequential: p50/p99 latency, and the per-step cost
//     ((10-step p50 − 0-step p50) / 10);
//   - awakeable resolve → handler resumed: from an HTTP request (fastify route calling
//     resolveAwakeable) and from another invocation (ctx.resolveAwakeable);
//   - throughput of 10-step invocations with 50 concurrent callers on distinct keys and on one key.
// Runs twice: on the test harness's PostgreSQL (fsync off: the headline, as the issue asks) and
// on one with default durability (fsync on), so the cost of real commits is visible too.
// Prints one JSON object on the last stdout line.
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import postgres from 'postgres';
import { z } from 'zod';
import { startPostgres } from '../tests/helpers/postgres';
import { createDb, migrate } from '../src/store';
import { createLogger } from '../src/log';
import { createEngine, handler } from '../src/workflow/engine';

/** Enough calls for JIT and the connection pool to settle before measuring. */
const WARMUP = 50;
/** 300 samples make p99 a real observation (the 3rd worst), in about a second. */
const LATENCY_RUNS = 300;
/** Each sample waits for a suspension; 200 keep the phase short and p99 meaningful. */
const AWAKEABLE_RUNS = 200;
/** Long enough to amortise ramp-up, short enough to keep the whole bench near a minute. */
const THROUGHPUT_MS = 4_000;
/** The concurrency the issue's comparison numbers were measured at. */
const CONCURRENCY = 50;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(2));
};

async function suite(server: { adminUrl: string; urlFor(db: string): string }) {
const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe('CREATE DATABASE bench_engine');
await admin.end();
const sql = createDb(server.urlFor('bench_engine'), { max: 20, applicationName: 'bench-engine' });
await migrate(sql);

const engine = createEngine({ sql, logger: createLogger('silent'), concurrency: CONCURRENCY });

const resumed = new Map<string, (t: number) => void>();
const published = new Map<string, (id: string) => void>();
const resolverStart = new Map<string, number>();

const Bench = engine.service('bench', {
  ten: handler({ input: z.object({}), output: z.number() }, async (ctx) => {
    let n = 0;
    for (let i = 0; i < 10; i++) n = await ctx.run(`step-${i}`, () => n + 1);
    return n;
  }),
  zero: handler({ input: z.object({}), output: z.number() }, async () => 0),
  wait: handler({ input: z.object({ tag: z.string() }), output: z.number() }, async (ctx, { tag }) => {
    const a = ctx.awakeable<number>();
    await ctx.run('publish', () => void published.get(tag)?.(a.id));
    const v = await a.promise;
    resumed.get(tag)?.(performance.now());
    return v;
  }),
  resolver: handler({ input: z.object({ id: z.string(), tag: z.string() }), output: z.boolean() }, async (ctx, { id, tag }) => {
    await ctx.run('prepare', () => 1);
    resolverStart.set(tag, performance.now());
    return ctx.resolveAwakeable(id, 1);
  }),
});

const Keyed = engine.object('keyed', {
  exclusive: {
    ten: handler({ input: z.object({}), output: z.number() }, async (ctx) => {
      let n = 0;
      for (let i = 0; i < 10; i++) n = await ctx.run(`step-${i}`, () => n + 1);
      return n;
    }),
  },
});

await engine.start();

const app = Fastify();
app.post<{ Body: { id: string } }>('/resolve', async (req) => ({ accepted: await engine.resolveAwakeable(req.body.id, 1) }));
const address = await app.listen({ host: '127.0.0.1', port: 0 });

async function latency(target: 'ten' | 'zero', runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await engine.call(Bench, target, {});
    out.push(performance.now() - t0);
  }
  return out;
}

async function waitSuspended(tag: string): Promise<string> {
  const id = await new Promise<string>((resolve) => published.set(tag, resolve));
  published.delete(tag);
  // Let the handler reach its await and park (the measured path is the resume, not the race).
  for (;;) {
    const [row] = await sql<{ status: string }[]>`
      SELECT status FROM engine_invocations i WHERE i.id = ${`inv-${id.split('-')[1]}`}`;
    if (row?.status === 'suspended') return id;
    await new Promise((r) => setTimeout(r, 1));
  }
}

async function awakeableFromHttp(runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const tag = `http-${i}`;
    const done = engine.call(Bench, 'wait', { tag });
    const id = await waitSuspended(tag);
    const at = new Promise<number>((resolve) => resumed.set(tag, resolve));
    const t0 = performance.now();
    await fetch(`${address}/resolve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id }) });
    out.push((await at) - t0);
    resumed.delete(tag);
    await done;
  }
  return out;
}

async function awakeableFromInvocation(runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const tag = `inv-${i}`;
    const done = engine.call(Bench, 'wait', { tag });
    const id = await waitSuspended(tag);
    const at = new Promise<number>((resolve) => resumed.set(tag, resolve));
    await engine.call(Bench, 'resolver', { id, tag });
    out.push((await at) - resolverStart.get(tag)!);
    resumed.delete(tag);
    await done;
  }
  return out;
}

async function throughput(keyFor: (worker: number, n: number) => string): Promise<number> {
  let completed = 0;
  const deadline = performance.now() + THROUGHPUT_MS;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      for (let n = 0; performance.now() < deadline; n++) {
        await engine.call(Keyed, 'ten', {}, { key: keyFor(w, n) });
        completed++;
      }
    }),
  );
  return Number((completed / ((performance.now() - t0) / 1000)).toFixed(1));
}

await latency('ten', WARMUP);
await latency('zero', WARMUP);
const ten = await latency('ten', LATENCY_RUNS);
const zero = await latency('zero', LATENCY_RUNS);
await awakeableFromHttp(20);
const http = await awakeableFromHttp(AWAKEABLE_RUNS);
const fromInv = await awakeableFromInvocation(AWAKEABLE_RUNS);
const distinct = await throughput((w) => `w${w}`);
const oneKey = await throughput(() => 'one');

const result = {
  tenStep: { p50Ms: pct(ten, 50), p99Ms: pct(ten, 99), runs: LATENCY_RUNS },
  zeroStep: { p50Ms: pct(zero, 50), p99Ms: pct(zero, 99) },
  perStepMs: Number(((pct(ten, 50) - pct(zero, 50)) / 10).toFixed(3)),
  awakeableResume: {
    fromHttp: { p50Ms: pct(http, 50), p99Ms: pct(http, 99), runs: AWAKEABLE_RUNS },
    fromInvocation: { p50Ms: pct(fromInv, 50), p99Ms: pct(fromInv, 99), runs: AWAKEABLE_RUNS },
  },
  throughputTenStepPerSec: { concurrency: CONCURRENCY, distinctKeys: distinct, oneKey },
};

await app.close();
await engine.stop();
await sql.end();
return result;
}

async function commitP50(server: { urlFor(db: string): string }): Promise<number> {
  const sql = postgres(server.urlFor('bench_engine'), { max: 1, onnotice: () => {} });
  await sql`CREATE TABLE IF NOT EXISTS bench_commit (id serial PRIMARY KEY, at timestamptz DEFAULT now())`;
  const xs: number[] = [];
  for (let i = 0; i < 300; i++) {
    const t0 = performance.now();
    await sql`INSERT INTO bench_commit DEFAULT VALUES`;
    xs.push(performance.now() - t0);
  }
  await sql.end();
  return pct(xs, 50);
}

const fast = await startPostgres();
const headline = await suite(fast);
const fastCommit = await commitP50(fast);
await fast.stop();
const slow = await startPostgres({ durable: true });
const durable = await suite(slow);
const durableCommit = await commitP50(slow);
await slow.stop();

console.log(
  JSON.stringify({
    bench: 'engine',
    ...headline,
    postgres: 'embedded via tests/helpers/postgres.ts (fsync off, synchronous_commit off)',
    oneRowCommitP50Ms: fastCommit,
    durablePostgres: { postgres: 'embedded, default durability (fsync on)', oneRowCommitP50Ms: durableCommit, ...durable },
    targets: { tenStepP50Ms: 12, awakeableP50Ms: 3, awakeableP99Ms: 10, distinctKeysPerSec: 300 },
  }),
);
