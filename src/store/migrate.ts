// The migration runner. Each migration runs in its own transaction together with the row that
// records it, so a failing file leaves neither schema nor record behind. A transaction-scoped
// advisory lock serialises concurrent runners (two ctrl replicas starting at once): the second
// waits, then sees the record and skips. Checksums catch an applied file that was edited later.
import type { Sql, TxSql } from './db';
import { bundledMigrations, type Migration } from './migrations';

/** Arbitrary constant naming "the migration lock" in pg_advisory_xact_lock's key space. */
const MIGRATION_LOCK_KEY = 727_001;

export interface MigrationResult {
  applied: string[];
  skipped: number;
}

async function lockAndEnsureTable(tx: TxSql): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
  await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
  )`;
}

export class MigrationError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'MigrationError';
  }
}

export async function migrate(sql: Sql, migrations: Migration[] = bundledMigrations()): Promise<MigrationResult> {
  const result: MigrationResult = { applied: [], skipped: 0 };
  for (const m of migrations) {
    await sql.begin(async (tx) => {
      await lockAndEnsureTable(tx);
      const [row] = await tx<{ checksum: string }[]>`SELECT checksum FROM schema_migrations WHERE version = ${m.version}`;
      if (row) {
        if (row.checksum !== m.checksum) {
          throw new MigrationError(`migration ${m.name} was changed after it was applied (checksum mismatch)`);
        }
        result.skipped++;
        return;
      }
      try {
        // simple(): the file may hold many statements, which the extended protocol refuses.
        await tx.unsafe(m.sql).simple();
      } catch (err) {
        throw new MigrationError(`migration ${m.name} failed: ${(err as Error).message}`, err);
      }
      await tx`INSERT INTO schema_migrations (version, name, checksum) VALUES (${m.version}, ${m.name}, ${m.checksum})`;
      result.applied.push(m.name);
    });
  }
  return result;
}

/** Names of migrations this build knows that the database has not applied (for /readyz). */
export async function pendingMigrations(sql: Sql, migrations: Migration[] = bundledMigrations()): Promise<string[]> {
  const [exists] = await sql<{ present: boolean }[]>`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`;
  if (!exists?.present) return migrations.map((m) => m.name);
  const rows = await sql<{ version: number }[]>`SELECT version FROM schema_migrations`;
  const applied = new Set(rows.map((r) => r.version));
  return migrations.filter((m) => !applied.has(m.version)).map((m) => m.name);
}
