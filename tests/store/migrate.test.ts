import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { emptyDb } from '../helpers/db';
import { bundledMigrations, migrate, parseMigrations, pendingMigrations, MigrationError } from '../../src/store';
import { createDb } from '../../src/store/db';

test('migrate applies every migration once and is idempotent', async () => {
  const db = await emptyDb();
  assert.deepEqual(await pendingMigrations(db.sql), bundledMigrations().map((m) => m.name));
  const first = await migrate(db.sql);
  assert.deepEqual(first.applied, bundledMigrations().map((m) => m.name));
  const second = await migrate(db.sql);
  assert.deepEqual(second.applied, []);
  assert.equal(second.skipped, bundledMigrations().length);
  assert.deepEqual(await pendingMigrations(db.sql), []);
});

test('two runners started at once both succeed and apply each migration once', async () => {
  const db = await emptyDb();
  // Separate pools, so the runners really race on separate connections.
  const a = createDb(db.url, { max: 2 });
  const b = createDb(db.url, { max: 2 });
  try {
    const [ra, rb] = await Promise.all([migrate(a), migrate(b)]);
    const all = [...ra.applied, ...rb.applied].sort();
    assert.deepEqual(all, bundledMigrations().map((m) => m.name).sort());
    const rows = await db.sql<{ version: number; n: number }[]>`
      SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version`;
    assert.equal(rows.length, bundledMigrations().length);
    assertEvery(rows, (r) => r.n === 1);
  } finally {
    await Promise.all([a.end(), b.end()]);
  }
});

test('a failing migration leaves no partial schema and no record', async () => {
  const db = await emptyDb();
  const migrations = parseMigrations([
    { name: '0001_ok.sql', sql: 'CREATE TABLE good (id int);' },
    { name: '0002_bad.sql', sql: 'CREATE TABLE half (id int); CREATE TABLE broken (id nosuchtype);' },
  ]);
  await assert.rejects(migrate(db.sql, migrations), (err: unknown) => {
    assert.ok(err instanceof MigrationError);
    assert.match((err as Error).message, /0002_bad\.sql failed/);
    return true;
  });
  const [t] = await db.sql<{ good: string | null; half: string | null }[]>`
    SELECT to_regclass('good')::text AS good, to_regclass('half')::text AS half`;
  assert.equal(t!.good, 'good');
  assert.equal(t!.half, null, 'the first statement of the failed file must be rolled back');
  const versions = await db.sql<{ version: number }[]>`SELECT version FROM schema_migrations ORDER BY version`;
  assert.deepEqual(versions.map((v) => v.version), [1]);
  assert.deepEqual(await pendingMigrations(db.sql, migrations), ['0002_bad.sql']);
});

test('an applied migration edited afterwards is refused', async () => {
  const db = await emptyDb();
  await migrate(db.sql, parseMigrations([{ name: '0001_a.sql', sql: 'CREATE TABLE a (id int);' }]));
  await assert.rejects(
    migrate(db.sql, parseMigrations([{ name: '0001_a.sql', sql: 'CREATE TABLE a (id bigint);' }])),
    /changed after it was applied/,
  );
});

test('migration files must be numbered and unique', () => {
  assert.throws(() => parseMigrations([{ name: 'init.sql', sql: '' }]), /NNNN_name\.sql/);
  assert.throws(
    () => parseMigrations([{ name: '0001_a.sql', sql: '' }, { name: '0001_b.sql', sql: '' }]),
    /share version 1/,
  );
});
