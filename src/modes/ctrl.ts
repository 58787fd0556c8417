// `unkey-infra ctrl`: wiring of the control plane. Returns a handle so `dev` and tests can run
// ctrl in-process and stop it.
import type { CtrlConfig } from '../config';
import { createLogger, type Logger } from '../log';
import { createDb, migrate } from '../store';
import { buildCtrlApp } from '../http';

export interface CtrlHandle {
  url: string;
  close(): Promise<void>;
}

export async function startCtrl(cfg: CtrlConfig, logger: Logger = createLogger(cfg.logLevel, { service: 'ctrl' })): Promise<CtrlHandle> {
  const sql = createDb(cfg.databaseUrl, { applicationName: 'unkey-infra-ctrl' });
  try {
    if (!cfg.noMigrate) {
      const r = await migrate(sql);
      logger.info({ applied: r.applied, skipped: r.skipped }, 'migrations done');
    }
    const { app } = await buildCtrlApp({ sql, logger });
    await app.listen({ host: cfg.listen.host, port: cfg.listen.port });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : cfg.listen.port;
    const url = `http://${cfg.listen.host.includes(':') ? `[${cfg.listen.host}]` : cfg.listen.host}:${port}`;
    logger.info({ url }, 'ctrl listening');
    return {
      url,
      async close() {
        await app.close();
        await sql.end({ timeout: 5 });
      },
    };
  } catch (err) {
    await sql.end({ timeout: 1 });
    throw err;
  }
}
