// The `unkey-infra` program: parses the command line, loads and validates configuration, and
// hands off to a mode. Exit codes: 0 ok, 1 runtime failure, 2 invalid usage or configuration.
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig, modeFromArgv } from './config';
import { createLogger } from './log';
import { closeOnSignal } from './lifecycle';
import { createTokenCommand, runMigrate, startCtrl } from './modes';

const program = new Command('unkey-infra')
  .description('Pull-based deployment orchestrator for container workloads across Kubernetes clusters')
  .exitOverride()
  .showHelpAfterError()
  // Subcommands that repeat a parent's flag (`ctrl tokens create --database-url`) need options
  // to bind to the command they follow; commander only honours that when the root enables it.
  .enablePositionalOptions();

// Defaults live in the zod schemas (src/config.ts), not here: commander defaults would hide
// the UNKEY_INFRA_* environment variables, which only apply when a flag is absent.
program
  .command('ctrl')
  .description('run the control plane: HTTP API, workflows, change feed')
  .option('--database-url <url>', 'PostgreSQL URL (required)')
  .option('--listen <host:port>', 'address to serve on (default 127.0.0.1:7070)')
  .option('--admin-token <token>', 'bearer token for the public API (required, 16+ characters)')
  .option('--agent-tokens <pairs>', 'agent tokens as REGION=TOKEN,…')
  .option('--no-migrate', 'do not apply migrations on start')
  .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (default info)')
  .action(async (opts: Record<string, unknown>) => {
    const cfg = loadConfig('ctrl', { ...opts, migrate: undefined, noMigrate: opts.migrate === false ? true : undefined });
    const handle = await startCtrl(cfg);
    await closeOnSignal(handle, createLogger(cfg.logLevel, { service: 'ctrl' }));
  });

// ctrl and `ctrl tokens create` both define --database-url; without positional options ctrl
// would swallow the subcommand's copy.
const ctrlCommand = program.commands.find((c) => c.name() === 'ctrl')!.enablePositionalOptions();
const tokens = ctrlCommand.command('tokens').description('manage agent tokens');
tokens
  .command('create')
  .description('create an agent token for one region; prints it once (only a hash is stored)')
  .option('--region <region>', 'region the token may read and report (required)')
  .option('--database-url <url>', 'PostgreSQL URL (required)')
  .action(async (opts: Record<string, unknown>) => {
    const { id, token } = await createTokenCommand(loadConfig('tokens', opts));
    process.stdout.write(`${token}\n`);
    process.stderr.write(`created agent token ${id} for region ${String(opts.region ?? '')}; store it now, it is not shown again\n`);
  });

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .option('--database-url <url>', 'PostgreSQL URL (required)')
  .option('--log-level <level>', 'log level (default info)')
  .action(async (opts: Record<string, unknown>) => {
    await runMigrate(loadConfig('migrate', opts));
  });

async function main(argv: string[]): Promise<void> {
  try {
    await program.parseAsync(modeFromArgv(argv, process.env), { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`unkey-infra: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`unkey-infra: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  }
}

await main(process.argv.slice(2));
