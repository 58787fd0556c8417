// Restate as a bench:engine subject: its server (one node, its defaults, so its log and RocksDB
// WAL are fsynced as PostgreSQL's commits are in the durable run) in a child process on free
// local ports and a temporary data directory, and the same handlers on the TypeScript SDK in
// this process. Callers go through its HTTP ingress, the only way in for a Restate client.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort } from '../src/net';
import type { Subject } from './_engine-shapes';
import { RESTATE, ensurePeer, peerRequire } from './_peer-install';

/** The server needs a few seconds to provision its one-node cluster on first start. */
const READY_TIMEOUT_MS = 60_000;
/** After the handler published its awakeable it acknowledges that step and awaits; this is
 *  ample for it to be waiting when the resolution arrives (the measured path is the resume). */
const SETTLE_MS = 20;

/** The subset of the SDK used here (its types live in the peer's directory, not the project's). */
interface RestateCtx {
  run<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  awakeable<T>(): { id: string; promise: Promise<T> };
  resolveAwakeable(id: string, payload: unknown): void;
}

// Over 80 lines: one subject's life (server, handlers, registration, the shapes' calls, stop),
// whose closures share the server's ports and the handlers' maps.
export async function startRestate(): Promise<Subject & { version: string }> {
  const dir = ensurePeer(RESTATE);
  const req = peerRequire(dir);
  // The SDK logs every invocation at info level by default: that would be work Restate's side
  // does and ours does not.
  process.env.RESTATE_LOGGING ??= 'ERROR';
  const restate = req('@restatedev/restate-sdk') as {
    service(d: { name: string; handlers: Record<string, (ctx: RestateCtx, input: any) => Promise<unknown>> }): unknown;
    object(d: { name: string; handlers: Record<string, (ctx: RestateCtx, input: any) => Promise<unknown>> }): unknown;
    endpoint(): { bind(s: unknown): ReturnType<typeof restate.endpoint>; listen(port: number): Promise<number> };
  };
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  const bin = join(dir, 'node_modules', '@restatedev', `restate-server-${process.platform}-${arch}`, 'bin', 'restate-server');
  const [ingress, adminPort, node, pgwire, endpointPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const base = mkdtempSync(join(tmpdir(), 'unkey-infra-restate-'));
  const log = openSync(join(base, 'server.log'), 'a');
  const server: ChildProcess = spawn(bin, ['--base-dir', join(base, 'data'), '--listen-mode', 'tcp', '--no-logo', '--node-name', 'bench'], {
    env: {
      ...process.env,
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingress}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`,
      RESTATE_BIND_ADDRESS: `127.0.0.1:${node}`,
      RESTATE_ADMIN__QUERY_ENGINE__PGSQL_BIND_ADDRESS: `127.0.0.1:${pgwire}`,
      // No telemetry and no update check: this machine reaches no such service.
      RESTATE_DISABLE_TELEMETRY: 'true',
      DO_NOT_TRACK: '1',
      RESTATE_LOG_FILTER: 'warn',
    },
    stdio: ['ignore', log, log],
  });

  const resumed = new Map<string, (t: number) => void>();
  const published = new Map<string, (id: string) => void>();
  const resolverStart = new Map<string, number>();
  const tenSteps = async (ctx: RestateCtx) => {
    let n = 0;
    for (let i = 0; i < 10; i++) n = await ctx.run(`step-${i}`, () => n + 1);
    return n;
  };
  const bench = restate.service({
    name: 'bench',
    handlers: {
      ten: tenSteps,
      zero: async () => 0,
      wait: async (ctx, { tag }: { tag: string }) => {
        const a = ctx.awakeable<number>();
        await ctx.run('publish', () => void published.get(tag)?.(a.id));
        const v = await a.promise;
        resumed.get(tag)?.(performance.now());
        return v;
      },
      resolver: async (ctx, { id, tag }: { id: string; tag: string }) => {
        await ctx.run('prepare', () => 1);
        resolverStart.set(tag, performance.now());
        ctx.resolveAwakeable(id, 1);
        return true;
      },
    },
  });
  const keyed = restate.object({ name: 'keyed', handlers: { ten: tenSteps } });
  await restate.endpoint().bind(bench).bind(keyed).listen(endpointPort);

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`restate-server exited (${server.exitCode}); see ${join(base, 'server.log')}`);
    const ok = await fetch(`http://127.0.0.1:${adminPort}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`restate-server not healthy within ${READY_TIMEOUT_MS} ms; see ${join(base, 'server.log')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const reg = await fetch(`http://127.0.0.1:${adminPort}/deployments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ uri: `http://127.0.0.1:${endpointPort}` }),
  });
  if (!reg.ok) throw new Error(`restate: registering the deployment failed: ${reg.status} ${await reg.text()}`);

  const post = async (path: string, body: unknown): Promise<unknown> => {
    const r = await fetch(`http://127.0.0.1:${ingress}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`restate ${path}: ${r.status} ${await r.text()}`);
    return r.json();
  };
  // The partitions take a moment to get leaders after provisioning: the first calls may fail.
  for (let i = 0; ; i++) {
    try {
      await post('/bench/zero', {});
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async function waiter(tag: string): Promise<{ id: string; done: Promise<unknown>; at: Promise<number> }> {
    const idP = new Promise<string>((resolve) => published.set(tag, resolve));
    const done = post('/bench/wait', { tag });
    const id = await idP;
    published.delete(tag);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { id, done, at: new Promise<number>((resolve) => resumed.set(tag, resolve)) };
  }

  return {
    name: 'restate',
    version: RESTATE.packages['@restatedev/restate-server']!,
    oneKey: true,
    ten: () => post('/bench/ten', {}),
    zero: () => post('/bench/zero', {}),
    keyedTen: (key) => post(`/keyed/${encodeURIComponent(key)}/ten`, {}),
    async awakeableFromHttp(tag) {
      const w = await waiter(tag);
      const t0 = performance.now();
      const r = await fetch(`http://127.0.0.1:${ingress}/restate/awakeables/${w.id}/resolve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '1' });
      if (!r.ok) throw new Error(`restate resolve: ${r.status}`);
      const ms = (await w.at) - t0;
      resumed.delete(tag);
      await w.done;
      return ms;
    },
    async awakeableFromInvocation(tag) {
      const w = await waiter(tag);
      await post('/bench/resolver', { id: w.id, tag });
      const ms = (await w.at) - resolverStart.get(tag)!;
      resumed.delete(tag);
      resolverStart.delete(tag);
      await w.done;
      return ms;
    },
    async stop() {
      await new Promise<void>((resolve) => {
        if (server.exitCode !== null) return resolve();
        server.once('exit', () => resolve());
        server.kill('SIGTERM');
        setTimeout(() => server.kill('SIGKILL'), 10_000).unref();
      });
      rmSync(base, { recursive: true, force: true });
    },
  };
}
