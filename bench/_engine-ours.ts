// This engine as a bench:engine subject (_engine-shapes.ts), on a database of its own on the
// given PostgreSQL. Callers are in process (engine.call), as ctrl's API handlers are; the
// awakeable is resolved over HTTP by a fastify route, as ctrl's API does. The pool is counted:
// statements sent per invocation moves far less with the machine's load than a timing does,
// though how many calls share a group commit still depends on timing (0.36-0.47 seen).
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import postgres from 'postgres';
import { z } from 'zod';
import { createDb, migrate, type Sql } from '../src/store';
import { createLogger } from '../src/log';
import { createEngine, handler } from '../src/workflow/engine';
import type { Subject } from './_engine-shapes';

export interface Ours extends Subject {
  /** Statements the engine's pool was asked for so far. */
  statements(): number;
  /** engine_leases_lost_total so far: executions dropped because a lease lapsed or was taken.
   *  Nonzero in a run with one engine process means a stall (the lease lapsed under it). */
  leasesLost(): Promise<number>;
}

// Over 80 lines: one subject's life (database, engine, handlers, the HTTP route, the shapes'
// calls, stop), whose closures share the engine and the handlers' maps.
export async function startOurs(server: { adminUrl: string; urlFor(db: string): string }, database: string, concurrency: number): Promise<Ours> {
  const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${database}`);
  await admin.end();
  const pool = createDb(server.urlFor(database), { max: 20, applicationName: 'bench-engine' });
  await migrate(pool);
  let statements = 0;
  // Every tagged-template call on the pool is one statement sent (the engine's only path).
  const sql = new Proxy(pool, {
    apply(target, self, args) {
      statements++;
      return Reflect.apply(target as unknown as (...a: unknown[]) => unknown, self, args);
    },
  }) as Sql;
  const registry = new Registry();
  const engine = createEngine({ sql, logger: createLogger('silent'), concurrency, registry });
  const resumed = new Map<string, (t: number) => void>();
  const published = new Map<string, (id: string) => void>();
  const resolverStart = new Map<string, number>();
  const tenSteps = async (ctx: { run<T>(name: string, fn: () => T): PromiseLike<T> }) => {
    let n = 0;
    for (let i = 0; i < 10; i++) n = await ctx.run(`step-${i}`, () => n + 1);
    return n;
  };
  const Bench = engine.service('bench', {
    ten: handler({ input: z.object({}), output: z.number() }, tenSteps),
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
  const Keyed = engine.object('keyed', { exclusive: { ten: handler({ input: z.object({}), output: z.number() }, tenSteps) } });
  await engine.start();
  const app = Fastify();
  app.post<{ Body: { id: string } }>('/resolve', async (req) => ({ accepted: await engine.resolveAwakeable(req.body.id, 1) }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });

  /** Starts a waiter and returns its awakeable id once it is parked (the measured path is the
   *  resume, not the race with suspension). */
  async function parkedWaiter(tag: string): Promise<{ id: string; done: Promise<unknown>; at: Promise<number> }> {
    const idP = new Promise<string>((resolve) => published.set(tag, resolve));
    const done = engine.call(Bench, 'wait', { tag });
    const id = await idP;
    published.delete(tag);
    for (;;) {
      const [row] = await pool<{ status: string }[]>`SELECT status FROM engine_invocations WHERE id = ${`inv-${id.split('-')[1]}`}`;
      if (row?.status === 'suspended') break;
      await new Promise((r) => setTimeout(r, 1));
    }
    const at = new Promise<number>((resolve) => resumed.set(tag, resolve));
    return { id, done, at };
  }

  return {
    name: 'ours',
    oneKey: true,
    statements: () => statements,
    async leasesLost() {
      const m = await registry.getSingleMetric('engine_leases_lost_total')?.get();
      return m?.values.reduce((n, v) => n + v.value, 0) ?? 0;
    },
    ten: () => engine.call(Bench, 'ten', {}),
    zero: () => engine.call(Bench, 'zero', {}),
    keyedTen: (key) => engine.call(Keyed, 'ten', {}, { key }),
    async awakeableFromHttp(tag) {
      const w = await parkedWaiter(tag);
      const t0 = performance.now();
      await fetch(`${address}/resolve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: w.id }) });
      const ms = (await w.at) - t0;
      resumed.delete(tag);
      await w.done;
      return ms;
    },
    async awakeableFromInvocation(tag) {
      const w = await parkedWaiter(tag);
      await engine.call(Bench, 'resolver', { id: w.id, tag });
      const ms = (await w.at) - resolverStart.get(tag)!;
      resumed.delete(tag);
      resolverStart.delete(tag);
      await w.done;
      return ms;
    },
    async stop() {
      await app.close();
      await engine.stop();
      await pool.end();
    },
  };
}
