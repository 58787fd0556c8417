// Per-test-file databases. The test runner (tests/run.ts) starts one PostgreSQL and migrates a
// template database once; each test file clones the template (CREATE DATABASE … TEMPLATE takes
// milliseconds) so files run in parallel without seeing each other's rows. Run a file directly
// (`node --import tsx --test tests/x.test.ts`) and the helper starts a private server instead.
import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { createDb, migrate, type Sql } from '../../src/store';
import { startPostgres, type PgServer } from './postgres';

const TEMPLATE = 'unkey_template';

interface Cluster {
  adminUrl: string;
  urlFor(db: string): string;
}

let cluster: Promise<Cluster> | undefined;
let privateCluster: Promise<Cluster> | undefined;

/**
 * A PostgreSQL server of this file's own. The change feed reads only rows older than the
 * oldest running transaction of the whole server (pg_snapshot_xmin is cluster-wide), so a file
 * that holds transactions open on purpose would stall every other file's feed, and be stalled
 * by theirs, on the shared server. Such files ask for isolation.
 */
function getPrivateCluster(): Promise<Cluster> {
  privateCluster ??= (async () => {
    const server = await startPostgres();
    after(() => server.stop());
    await prepareTemplate(server);
    return server;
  })();
  return privateCluster;
}

/** Called by the runner and by the lazy path: creates and migrates the template database. */
export async function prepareTemplate(server: Pick<PgServer, 'adminUrl' | 'urlFor'>): Promise<void> {
  const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${TEMPLATE}`);
    await admin.unsafe(`CREATE DATABASE ${TEMPLATE}`);
  } finally {
    await admin.end();
  }
  const sql = createDb(server.urlFor(TEMPLATE), { max: 1 });
  try {
    await migrate(sql);
  } finally {
    // CREATE DATABASE … TEMPLATE fails while anyone is connected to the template.
    await sql.end();
  }
}

function getCluster(): Promise<Cluster> {
  cluster ??= (async () => {
    const base = process.env.UNKEY_INFRA_TEST_PG_URL;
    if (base) {
      const u = new URL(base);
      return {
        adminUrl: base,
        urlFor: (db: string) => {
          const x = new URL(u);
          x.pathname = `/${db}`;
          return x.toString();
        },
      };
    }
    const server = await startPostgres();
    await prepareTemplate(server);
    after(() => server.stop());
    return server;
  })();
  return cluster;
}

export interface TestDb {
  name: string;
  url: string;
  sql: Sql;
  adminUrl: string;
}

async function createDatabase(template: string, isolated = false): Promise<{ name: string; url: string; adminUrl: string }> {
  const c = await (isolated ? getPrivateCluster() : getCluster());
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(c.adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  } finally {
    await admin.end();
  }
  // Not dropped: the run's server is deleted whole when it ends (tests/run.ts), and a drop in
  // an after hook would run before the file's own hooks (they run in registration order),
  // terminating connections a stack or feed server still uses while it shuts down.
  return { name, url: c.urlFor(name), adminUrl: c.adminUrl };
}

/** A fresh, migrated database for this test file, dropped when the file's tests finish. */
export async function testDb(opts: { isolated?: boolean } = {}): Promise<TestDb> {
  const db = await createDatabase(TEMPLATE, opts.isolated);
  const sql = createDb(db.url, { max: 10, applicationName: 'unkey-infra-test' });
  after(() => sql.end({ timeout: 1 }));
  return { ...db, sql };
}

/** A fresh database with no schema at all (for migration tests). */
export async function emptyDb(): Promise<TestDb> {
  const db = await createDatabase('template0');
  const sql = createDb(db.url, { max: 10, applicationName: 'unkey-infra-test' });
  after(() => sql.end({ timeout: 1 }));
  return { ...db, sql };
}
