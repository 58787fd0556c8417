// The `unkey-infra` program: parses the command line, loads and validates configuration, and
// hands off to a mode. Exit codes: 0 ok, 1 runtime failure, 2 invalid usage or configuration.
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig, modeFromArgv } from './config';
import { createLogger } from './log';
import { closeOnSignal } from './lifecycle';
import { createTokenCommand, formatTokenTable, listTokensCommand, revokeTokenCommand, rotateEpochCommand, runMigrate, startCtrl, startDev, startKrane, startKubeSim } from './modes';
import { registerClientCommands } from './cli';
import { confirmKraneGc } from './cli/krane-gc';
import { document, outputFormat, type OutputFormat } from './cli/output';
import { exitCodeOf, formatError } from './cli/errors';

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
  .option('--database-direct-url <url>', 'a direct session to the primary for LISTEN, when --database-url is a transaction pooler (default: --database-url)')
  .option('--database-read-url <url>', 'a hot standby that full syncs read when it has caught up (default: the primary)')
  .option('--listen <host:port>', 'address to serve on (default 127.0.0.1:7070)')
  .option('--admin-token <token>', 'bearer token for the public API (required, 16+ characters)')
  .option('--agent-tokens <pairs>', 'agent tokens as REGION=TOKEN,…')
  .option('--no-migrate', 'do not apply migrations on start')
  .option('--build-command <cmd>', 'shell command that builds an image from $UNKEY_BUILD_CONTEXT')
  .option('--deploy-timeout <duration>', 'how long a deploy waits for instances (default 5m)')
  .option('--sentinel-timeout <duration>', 'how long a sentinel deploy waits to converge (default 10m)')
  .option('--sentinel-image <image>', 'image of newly created sentinels')
  .option('--sentinel-images <list>', 'images sentinels may run: REPOSITORY, REPOSITORY@sha256:… or sha256:…, comma-separated (default: any set by the admin token)')
  .option('--agent-offline-after <duration>', 'a region with no sign of life from its agent this long is offline (default 30s)')
  .option('--offline-grace <duration>', 'how long a deploy waits for an offline region before failing (default 60s)')
  .option('--apex-domain <domain>', 'parent domain of generated hostnames (default unkey.local)')
  .option('--engine-lease <duration>', 'workflow lease; a crashed replica\'s work resumes elsewhere after it (default 30s)')
  .option('--build-root <dir>', 'directory every build context must lie in (required with --build-command)')
  .option('--outbound-allow <hosts>', 'HOST[:PORT],… that outbound requests (Slack) may reach over http or at private addresses')
  .option('--request-timeout <duration>', 'a client must send its whole request within this (default 30s)')
  .option('--idle-timeout <duration>', 'close connections silent for this long; must exceed --sentinel-timeout (default 15m)')
  .option('--max-connections <n>', 'open connections at once; more are refused (default 10000)')
  .option('--audit-retention <duration>', 'audit rows older than this are deleted (default 90d)')
  .option('--key-rate-limit <n>', 'requests per second one API key may make on one replica; 0: no limit (default 20)')
  .option('--workspace-rate-limit <n>', 'requests per second all keys of one workspace may make together on one replica; 0: no limit (default 100)')
  .option('--otlp-endpoint <url>', 'export traces over OTLP/HTTP to this base URL (default: off; also OTEL_EXPORTER_OTLP_ENDPOINT)')
  .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (default info)')
  .option('--default-regions <regions>', 'regions of a deploy that names none and whose environment has none, as a,b,c')
  .option('--default-features <flags>', 'feature flags of workspaces that never set them (default multiRegion,canary,blueGreen,autoScaling)')
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
tokens
  .command('ls')
  .description('list agent tokens: id, region, created, revoked (never the tokens)')
  .option('--json', 'print JSON (-o json)')
  .option('-o, --output <format>', 'table (default; wide is the same), json or yaml')
  .option('--database-url <url>', 'PostgreSQL URL (required)')
  .action(async (opts: { json?: boolean; output?: string } & Record<string, unknown>) => {
    let format: OutputFormat;
    try {
      format = outputFormat(opts);
    } catch (err) {
      process.stderr.write(formatError(err));
      process.exitCode = exitCodeOf(err);
      return;
    }
    const list = await listTokensCommand(loadConfig('dbCommand', opts));
    process.stdout.write(format === 'json' || format === 'yaml' ? document(JSON.parse(JSON.stringify(list)), format) : formatTokenTable(list));
  });
tokens
  .command('revoke <id>')
  .description('revoke an agent token for good; every ctrl cuts its open streams')
  .option('--database-url <url>', 'PostgreSQL URL (required)')
  .action(async (id: string, opts: Record<string, unknown>) => {
    const r = await revokeTokenCommand(loadConfig('dbCommand', opts), id);
    if (r === 'unknown') {
      process.stderr.write(`unkey-infra: no agent token ${id}\n`);
      process.exitCode = 1;
    } else process.stderr.write(r === 'revoked' ? `revoked agent token ${id}\n` : `agent token ${id} was already revoked\n`);
  });
ctrlCommand
  .command('feed')
  .description('change feed maintenance')
  .command('rotate-epoch')
  .description('start a new feed epoch: every agent does a full sync (run after a restore from backup)')
  .option('--database-url <url>', 'PostgreSQL URL (required)')
  .action(async (opts: Record<string, unknown>) => {
    const epoch = await rotateEpochCommand(loadConfig('dbCommand', opts));
    process.stdout.write(`${epoch}\n`);
    process.stderr.write(`feed epoch is now ${epoch}; agents will full-sync on their next poll\n`);
  });

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .option('--database-url <url>', 'PostgreSQL URL (required)')
  .option('--log-level <level>', 'log level (default info)')
  .action(async (opts: Record<string, unknown>) => {
    await runMigrate(loadConfig('migrate', opts));
  });

const krane = program
  .command('krane')
  .description('run the agent of one cluster: pull desired state, apply it, report status')
  .option('--region <region>', 'region this cluster serves (required)')
  .option('--control-plane <url>', 'ctrl base URL (required)')
  .option('--token <token>', 'agent token of the region (required)')
  .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster, then $KUBECONFIG)')
  .option('--listen <host:port>', 'health and metrics address (default 127.0.0.1:7071)')
  .option('--resync-interval <duration>', 'full resync audit interval (default 5m)')
  .option('--leader-elect <bool>', 'elect one leader among replicas through the Lease krane-<region> in namespace unkey (default true)')
  .option('--image-pull-secret <name>', 'imagePullSecret added to workloads, for private registries')
  .option('--insecure', 'allow plain http to a control plane that is not on this machine')
  .option('--gc-max-fraction <share>', 'GC brake: hold a pass deleting more than this share of managed objects (default 0.5)')
  .option('--sentinel-liveness-path <path>', "sentinel liveness probe path on 8040 (default /_unkey/internal/health)")
  .option('--sentinel-readiness-path <path>', 'sentinel readiness probe path on 8040 (default /_unkey/internal/health)')
  .option('--sentinel-secrets-file <file>', 'flat JSON or KEY=VALUE file kept as the Secret sentinel-credentials that sentinels read')
  .option('--otlp-endpoint <url>', 'export traces over OTLP/HTTP to this base URL (default: off; also OTEL_EXPORTER_OTLP_ENDPOINT)')
  .option('--log-level <level>', 'log level (default info)')
  .action(async (opts: Record<string, unknown>) => {
    const cfg = loadConfig('krane', opts);
    const logger = createLogger(cfg.logLevel, { service: 'krane', region: cfg.region });
    const onLostLease = () => {
      logger.error('lost the leader lease: exiting, to come back as a candidate');
      process.exit(1);
    };
    const handle = await startKrane(cfg, { logger, onLostLease });
    await closeOnSignal(handle, logger);
  });

krane
  .command('gc')
  .description("lift krane's GC brake: approve the deletions it holds (run on krane's host)")
  .option('--confirm', 'approve the held deletions')
  .option('--token <token>', "the region's agent token (krane's --token)")
  .option('--listen <host:port>', "krane's --listen address (default 127.0.0.1:7071)")
  .action(async (opts: Record<string, unknown>) => {
    const approved = await confirmKraneGc(loadConfig('kraneGc', opts));
    process.stdout.write(`approved ${approved} objects for deletion; krane starts a full sync\n`);
  });

program
  .command('kube-sim')
  .description('run the Kubernetes API simulator (HTTP and TLS on one port)')
  .option('--port <port>', 'port to listen on (default 6443; 0 = any free port)')
  .option('--host <host>', 'address to bind (default 127.0.0.1)')
  .option('--ready-delay <ms>', 'milliseconds until a pod is Ready (default 1000)')
  .option('--kubeconfig-out <file>', 'write a kubeconfig for clients here')
  .option('--log-level <level>', 'log level (default info)')
  .option('--no-cilium', "serve no CiliumNetworkPolicy (a cluster without Cilium's CRD)")
  .option('--nodes <n>', 'nodes with room: pods take what they request from their node (default: nodes without limit)')
  .option('--node-cpu <quantity>', "each node's allocatable CPU, e.g. 4 or 3500m (default 8; turns on the accounting)")
  .option('--node-memory <quantity>', "each node's allocatable memory, e.g. 16Gi (default 32Gi; turns on the accounting)")
  .action(async (opts: Record<string, unknown>) => {
    const cfg = loadConfig('kubeSim', { ...opts, cilium: undefined, noCilium: opts.cilium === false ? true : undefined });
    const logger = createLogger(cfg.logLevel, { service: 'kube-sim' });
    const handle = await startKubeSim(cfg, {}, logger);
    process.stdout.write(`kube-sim listening on ${handle.url}${handle.kubeconfigPath ? ` (kubeconfig: ${handle.kubeconfigPath})` : ''}\n`);
    await closeOnSignal(handle, logger);
  });

program
  .command('dev')
  .description('run everything on this machine: embedded PostgreSQL, ctrl, a simulated cluster and a krane per region')
  .option('--regions <list>', 'regions to simulate (default us-east-1,eu-west-1)')
  .option('--data-dir <dir>', 'where data and dev.json live (default .unkey-infra/dev)')
  .option('--fresh', 'wipe the data directory first')
  .option('--listen <host:port>', 'ctrl API address (default 127.0.0.1:7070)')
  .option('--ready-delay <ms>', 'milliseconds until a simulated pod is Ready (default 1000)')
  .option('--outbound-allow <hosts>', 'HOST[:PORT],… that outbound requests (Prometheus, Slack) may reach over http or at private addresses')
  .option('--sentinel-images <list>', 'as ctrl: images sentinels may run (must allow the default sentinel image)')
  .option('--otlp-endpoint <url>', 'export traces over OTLP/HTTP to this base URL (default: off; also OTEL_EXPORTER_OTLP_ENDPOINT)')
  .option('--log-level <level>', 'log level (default warn)')
  .action(async (opts: Record<string, unknown>) => {
    const cfg = loadConfig('dev', opts);
    const logger = createLogger(cfg.logLevel, { service: 'dev' });
    const dev = await startDev(cfg);
    const lines = [
      'unkey-infra dev is running',
      `  API:          ${dev.file.apiUrl}`,
      `  admin token:  ${dev.file.adminToken}`,
      `  database:     ${dev.file.databaseUrl}`,
      ...Object.entries(dev.file.regions).map(([r, x]) => `  ${r.padEnd(13)} kube API ${x.kubeApiUrl}  krane ${x.kraneUrl}`),
      `  config:       ${cfg.dataDir}/dev.json (client commands read it)`,
      '',
      'try: unkey-infra deploy --image nginx:1.27 --wait        (Ctrl-C stops everything)',
      '',
    ];
    process.stdout.write(lines.join('\n'));
    await closeOnSignal(dev, logger);
  });

// Client commands (deploy, deployments, sentinels, invocations, rollout) talk to ctrl's API.
// config.ts stays the only reader of process.env: the environment is handed over here.
registerClientCommands(program, { env: process.env });

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
