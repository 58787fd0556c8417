// PgBouncer on its own in front of one PostgreSQL (tests/ha/pgbouncer.test.ts runs the e2e
// smoke through it; the HA cluster starts its own in front of HAProxy). Transaction mode, SCRAM
// towards clients, the given password towards the server.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { freePort } from '../../src/net';
import { pgbouncerConfig, pgbouncerUserlist } from './config';
import { chownTree, Proc, runAs, waitFor } from './processes';

export interface PgBouncer {
  port: number;
  /** URL of `database` through PgBouncer (ctrl given --database-direct-url talks to it as to a pooler). */
  urlFor(database: string): string;
  /** PgBouncer's admin console (SHOW POOLS, SHOW STATS). */
  adminUrl: string;
  stop(): Promise<void>;
}

export async function startPgBouncer(o: { upstream: { host: string; port: number }; user: string; password: string; waitMs?: number }): Promise<PgBouncer> {
  const who = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'unkey-pgbouncer-'));
  mkdirSync(join(dir, 'logs'));
  const port = await freePort();
  writeFileSync(join(dir, 'pgbouncer.ini'), pgbouncerConfig({ dir, port, upstream: o.upstream, admin: o.user }));
  writeFileSync(join(dir, 'userlist.txt'), pgbouncerUserlist([{ username: o.user, password: o.password }]), { mode: 0o600 });
  chownTree(dir, who);
  const proc = new Proc('pgbouncer', 'pgbouncer', [join(dir, 'pgbouncer.ini')], join(dir, 'logs'), who, dir);
  const urlFor = (db: string) => `postgres://${encodeURIComponent(o.user)}:${encodeURIComponent(o.password)}@127.0.0.1:${port}/${db}`;
  const stop = async () => {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  proc.start();
  try {
    await waitFor('PgBouncer answers', o.waitMs ?? 60_000, async () => {
      const s = postgres(urlFor('postgres'), { max: 1, onnotice: () => {}, connect_timeout: 3, prepare: false });
      try {
        await s`SELECT 1`;
        return true;
      } finally {
        await s.end({ timeout: 1 });
      }
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, urlFor, adminUrl: urlFor('pgbouncer'), stop };
}
