// Process lifecycle shared by the long-running modes: wait for SIGTERM/SIGINT, then close the
// mode's handle once. A second signal while closing exits at once, for an operator who means it.
import type { Logger } from './log';

export interface Closable {
  close(): Promise<void>;
}

export function closeOnSignal(handle: Closable, logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    let closing = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (closing) {
        logger.warn({ signal }, 'second signal, exiting now');
        process.exit(130);
      }
      closing = true;
      logger.info({ signal }, 'shutting down');
      handle
        .close()
        .then(() => logger.info('stopped'))
        .catch((err) => {
          logger.error({ err }, 'error during shutdown');
          process.exitCode = 1;
        })
        .finally(() => {
          process.off('SIGTERM', onSignal);
          process.off('SIGINT', onSignal);
          resolve();
        });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
