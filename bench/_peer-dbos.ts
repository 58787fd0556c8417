// DBOS Transact as a bench:engine subject: durable workflows on the same PostgreSQL as this
// engine (a database of its own), in this process. Its steps are runStep checkpoints; its
// awakeable is recv on a topic, resolved by send: from outside through an HTTP route (as ours
// is) and from another workflow. DBOS workflows have no keys, so the distinct-keys shape is 50
// concurrent workflows and there is no one-key shape to compare.
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import postgres from 'postgres';
import type { Subject } from './_engine-shapes';
import { DBOS as DBOS_PEER, ensurePeer, peerRequire } from './_peer-install';

/** After the workflow published its id it checkpoints that step and waits in recv; this is
 *  ample for it to be waiting when the message arrives (the measured path is the resume). */
const SETTLE_MS = 20;
/** recv's own timeout: far beyond any resume measured here. */
const RECV_TIMEOUT_S = 60;

interface DbosApi {
  setConfig(c: Record<string, unknown>): void;
  registerWorkflow<A extends unknown[], R>(fn: (...a: A) => Promise<R>, c: { name: string }): (...a: A) => Promise<R>;
  runStep<R>(fn: () => Promise<R>, c: { name: string }): Promise<R>;
  send(id: string, message: unknown, topic: string): Promise<void>;
  recv<T>(topic: string, timeoutSeconds: number): Promise<T | null>;
  readonly workflowID: string | undefined;
  launch(): Promise<void>;
  shutdown(): Promise<void>;
}

// Over 80 lines: one subject's life, whose closures share DBOS and the handlers' maps.
export async function startDbos(server: { adminUrl: string; urlFor(db: string): string }, database: string, poolSize: number): Promise<Subject & { version: string }> {
  const dir = ensurePeer(DBOS_PEER);
  const { DBOS } = peerRequire(dir)('@dbos-inc/dbos-sdk') as { DBOS: DbosApi };
  const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${database}`);
  await admin.end();
  // The same pool size as ours (20), so neither waits on connections the other has.
  DBOS.setConfig({ name: 'bench', systemDatabaseUrl: server.urlFor(database), systemDatabasePoolSize: Math.min(poolSize, 20), logLevel: 'error' });
  const resumed = new Map<string, (t: number) => void>();
  const published = new Map<string, (id: string) => void>();
  const resolverStart = new Map<string, number>();
  const ten = DBOS.registerWorkflow(async () => {
    let n = 0;
    for (let i = 0; i < 10; i++) n = await DBOS.runStep(async () => n + 1, { name: `step-${i}` });
    return n;
  }, { name: 'ten' });
  const zero = DBOS.registerWorkflow(async () => 0, { name: 'zero' });
  const wait = DBOS.registerWorkflow(async (tag: string) => {
    const id = DBOS.workflowID!;
    await DBOS.runStep(async () => void published.get(tag)?.(id), { name: 'publish' });
    const v = await DBOS.recv<number>('wake', RECV_TIMEOUT_S);
    resumed.get(tag)?.(performance.now());
    return v;
  }, { name: 'wait' });
  const resolver = DBOS.registerWorkflow(async (id: string, tag: string) => {
    await DBOS.runStep(async () => 1, { name: 'prepare' });
    resolverStart.set(tag, performance.now());
    await DBOS.send(id, 1, 'wake');
    return true;
  }, { name: 'resolver' });
  await DBOS.launch();
  const app = Fastify();
  app.post<{ Body: { id: string } }>('/resolve', async (req) => (await DBOS.send(req.body.id, 1, 'wake'), { accepted: true }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });

  async function waiter(tag: string): Promise<{ id: string; done: Promise<unknown>; at: Promise<number> }> {
    const idP = new Promise<string>((resolve) => published.set(tag, resolve));
    const done = wait(tag);
    const id = await idP;
    published.delete(tag);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { id, done, at: new Promise<number>((resolve) => resumed.set(tag, resolve)) };
  }

  return {
    name: 'dbos',
    version: DBOS_PEER.packages['@dbos-inc/dbos-sdk']!,
    oneKey: false,
    ten: () => ten(),
    zero: () => zero(),
    keyedTen: () => ten(),
    async awakeableFromHttp(tag) {
      const w = await waiter(tag);
      const t0 = performance.now();
      await fetch(`${address}/resolve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: w.id }) });
      const ms = (await w.at) - t0;
      resumed.delete(tag);
      await w.done;
      return ms;
    },
    async awakeableFromInvocation(tag) {
      const w = await waiter(tag);
      await resolver(w.id, tag);
      const ms = (await w.at) - resolverStart.get(tag)!;
      resumed.delete(tag);
      resolverStart.delete(tag);
      await w.done;
      return ms;
    },
    async stop() {
      await app.close();
      await DBOS.shutdown();
    },
  };
}
