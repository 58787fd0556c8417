// `unkey-infra migrate`: apply pending migrations and exit.
import type { MigrateConfig } from '../config';
import { createLogger } from '../log';
import { createDb, migrate } from '../store';

export async function runMigrate(cfg: MigrateConfig): Promise<void> {
  const logger = createLogger(cfg.logLevel, { service: 'migrate' });
  const sql = createDb(cfg.databaseUrl, { max: 1, applicationName: 'unkey-infra-migrate' });
  try {
    const r = await migrate(sql);
    logger.info({ applied: r.applied, skipped: r.skipped }, 'migrations done');
  } finally {
    await sql.end({ timeout: 5 });
  }
}
