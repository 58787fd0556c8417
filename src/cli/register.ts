// Maps the command line onto the command functions: declares the client commands on a
// commander program, runs the chosen one with a fresh context, prints any failure readably,
// and sets the exit code. Flags are declared on each leaf command because the program uses
// positional options (a parent would not see `deployments ls --api …`).
import type { Command } from 'commander';
import { envName } from '../config';
import type { Env } from './client';
import { exitCodeOf, formatError } from './errors';
import { processIo, type Io } from './io';
import type { WatchOptions } from './watch';
import {
  createContext,
  deployCommand,
  deployFlagFor,
  deploymentsAbort,
  deploymentsGet,
  deploymentsLs,
  deploymentsPromote,
  deploymentsRollback,
  deploymentsSetDesired,
  invocationsCancel,
  invocationsLs,
  invocationsShow,
  rolloutAction,
  rolloutStart,
  rolloutStatus,
  sentinelsDeploy,
  sentinelsLs,
  type CommandContext,
  deploymentsRollbackToVersion,
  deploymentsVersions,
  featuresGet,
  featuresSet,
  quarantineLs,
  quarantineRm,
} from './commands';
import { usageError } from './errors';
import { durationArg, envArg, floatArg, intArg, listArg, percentListArg } from './options';
import { regionsLs } from './commands/regions';
import { registerTenancyCommands } from './register-tenancy';
import { registerCompletion } from './register-completion';

export interface ClientCommandDeps {
  /** The process environment (UNKEY_INFRA_API, UNKEY_INFRA_TOKEN, UNKEY_INFRA_DATA_DIR); main passes process.env. */
  env?: Env;
  io?: Io;
  cwd?: string;
  watch?: Partial<WatchOptions>;
  /** Receives the exit code; default sets process.exitCode, so open handles never force an exit. */
  setExitCode?: (code: number) => void;
  /** Ends a `--watch` (tests); without it, SIGINT and SIGTERM do while a `--watch` runs. */
  signal?: AbortSignal;
}

function apiOptions(cmd: Command, json = true): Command {
  cmd
    .option('--api <url>', `ctrl base URL (env ${envName('api')}; default: apiUrl of <data-dir>/dev.json)`)
    .option('--token <token>', `admin token or API key (uik_…) (env ${envName('token')}; default: adminToken of dev.json)`)
    .option('--data-dir <dir>', `where \`unkey-infra dev\` keeps dev.json (env ${envName('dataDir')}; default .unkey-infra/dev)`);
  if (json) cmd.option('--json', "print the API's JSON answer");
  return cmd;
}

/** A list command's output flags: -o (with --json kept as -o json), and --watch where the API has events for it. */
export function listOptions(cmd: Command, opts: { watch?: string } = {}): Command {
  apiOptions(cmd).option('-o, --output <format>', 'table (default), wide (more columns), json or yaml: --json is -o json');
  if (opts.watch) cmd.option('-w, --watch', `after the list, print each ${opts.watch} again as it changes, until interrupted (Ctrl-C)`);
  return cmd;
}

type Run = (ctx: CommandContext, opts: Record<string, any>, args: string[]) => Promise<number>;

/** An AbortSignal that SIGINT or SIGTERM aborts while the command runs (then the handlers go, so
 *  a second Ctrl-C, or one after the command, ends the process as usual). */
function interruptSignal(): { signal: AbortSignal; release(): void } {
  const ac = new AbortController();
  const stop = () => {
    release();
    ac.abort();
  };
  const release = () => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return { signal: ac.signal, release };
}

// Over 80 lines: the command table, one short registration per command, as `--help` lists them.
export function registerClientCommands(program: Command, deps: ClientCommandDeps = {}): void {
  const setExitCode = deps.setExitCode ?? ((code: number) => void (process.exitCode = code));
  const action =
    (run: Run, flagFor?: (field: string) => string | undefined) =>
    async (...argv: unknown[]) => {
      const cmd = argv[argv.length - 1] as Command;
      const args = argv.slice(0, -2) as string[];
      // Only a watch runs until interrupted; elsewhere Ctrl-C keeps ending the process at once.
      const interrupt = deps.signal || !cmd.opts().watch ? undefined : interruptSignal();
      const signal = deps.signal ?? interrupt?.signal;
      const ctx = createContext({ io: deps.io ?? processIo(), env: deps.env ?? {}, ...(signal ? { signal } : {}), ...(deps.cwd ? { cwd: deps.cwd } : {}), ...(deps.watch ? { watch: deps.watch } : {}) });
      let code: number;
      try {
        code = await run(ctx, cmd.opts(), args);
      } catch (err) {
        ctx.io.err(formatError(err, flagFor));
        code = exitCodeOf(err);
      } finally {
        ctx.close();
        interrupt?.release();
      }
      setExitCode(code);
    };

  apiOptions(
    program
      .command('deploy')
      .description('create a deployment; with --wait follow it live (exit 0 ready, 1 failed, 3 gave up waiting)')
      .option('--image <image>', 'container image to run')
      .option('--build-context <dir>', 'build an image from this directory instead (ctrl runs its build command)')
      .option('--regions <list>', "regions, comma-separated (default: the environment's regions, else ctrl's --default-regions)", listArg)
      .option('--replicas <n>', 'instances per region (default 2)', intArg)
      .option('--cpu <millicores>', 'CPU per instance in millicores (default 500)', intArg)
      .option('--memory <mib>', 'memory per instance in MiB (default 512)', intArg)
      .option('--port <port>', 'container port (default 8080)', intArg)
      .option('--env <K=V>', 'environment variable (repeatable)', envArg)
      .option('--environment <id>', 'environment to deploy into (default "default")')
      .option('--strategy <type>', 'rolling (default), canary or blue-green')
      .option('--steps <list>', 'canary: traffic percentages, increasing, e.g. 10,50', percentListArg)
      .option('--pause <duration>', 'canary: how long each step holds (default 1m)')
      .option('--analysis-query <promql>', 'gate each step on this Prometheus query')
      .option('--analysis-min <x>', 'the query fails below this', floatArg)
      .option('--analysis-max <x>', 'the query fails above this', floatArg)
      .option('--analysis-interval <duration>', 'how often the query runs (default 10s)')
      .option('--prometheus-url <url>', 'Prometheus to query, e.g. http://prometheus:9090')
      .option('--judge <kind>', 'threshold (default: --analysis-min/max) or compare (the canary against its stable; $deployment and $region in the query)')
      .option('--direction <d>', 'compare: lower-is-better (default) or higher-is-better')
      .option('--tolerance <x>', 'compare: how much worse than the stable\'s median still passes (default 0.1)', floatArg)
      .option('--confidence <x>', 'compare: 1 - the most a healthy canary may fail (default 0.95)', floatArg)
      .option('--min-samples <n>', 'compare: samples each side needs for a verdict (default 20)', intArg)
      .option('--promote-early', 'compare: end a step early once the canary is shown within tolerance')
      .option('--wait', 'show live per-region progress until ready or failed (exit 1 also when rolled back)')
      .option('--timeout <duration>', 'with --wait: give up after this long (default 6m)', durationArg)
      .option('--version <version>', "this deployment's version, unique in its environment (default: the next v<N>)")
      .option('--autoscale <min:max[:cpu%]>', 'replicas follow CPU between min and max (target cpu% of requests, default 70) instead of --replicas')
      .option('--force', 'deploy the image even if it is quarantined in the environment'),
  ).action(action((ctx, o) => deployCommand(o, ctx), deployFlagFor));

  const deployments = program.command('deployments').description('list and manage deployments');
  listOptions(
    deployments
      .command('ls')
      .description('list the deployments of an environment, newest first')
      .option('--environment <id>', 'environment (default "default")')
      .option('--limit <n>', 'at most this many (default 100)', intArg),
    { watch: 'deployment' },
  ).action(action((ctx, o) => deploymentsLs(o, ctx)));
  apiOptions(deployments.command('get').argument('<id>').description('status, regions, instances, domains and steps of one deployment')).action(
    action((ctx, o, [id]) => deploymentsGet(id!, o, ctx)),
  );
  apiOptions(deployments.command('stop').argument('<id>').description('set the desired state to stopped (krane removes the workloads)')).action(
    action((ctx, o, [id]) => deploymentsSetDesired(id!, 'stop', o, ctx)),
  );
  apiOptions(deployments.command('start').argument('<id>').description('set the desired state back to running')).action(
    action((ctx, o, [id]) => deploymentsSetDesired(id!, 'start', o, ctx)),
  );
  apiOptions(
    deployments
      .command('rollback')
      .argument('[id]', 'the deployment whose config to deploy again (or --to-version)')
      .description("create a new deployment from this one's (or this version's) config; prints its id")
      .option('--environment <id>', 'with --to-version: the environment (default "default")')
      .option('--to-version <version>', 'roll back to this version of the environment')
      .option('--force', 'even if its image is quarantined')
      .option('--wait', 'follow the new deployment until ready or failed')
      .option('--timeout <duration>', 'with --wait: give up after this long (default 6m)', durationArg),
  ).action(
    action((ctx, o, [id]) => {
      if (o.toVersion) return deploymentsRollbackToVersion(o as Parameters<typeof deploymentsRollbackToVersion>[0], ctx);
      if (!id) throw usageError('give a deployment id, or --to-version V [--environment E]');
      return deploymentsRollback(id, o, ctx);
    }),
  );
  listOptions(
    deployments
      .command('versions')
      .description("an environment's versions, newest first: deployment, image, status, rollbacks")
      .option('--environment <id>', 'environment (default "default")')
      .option('--limit <n>', 'at most this many (default 100)', intArg),
    { watch: 'version' },
  ).action(action((ctx, o) => deploymentsVersions(o, ctx)));
  const quarantine = deployments.command('quarantine').description("images quarantined in an environment after they failed there");
  listOptions(quarantine.command('ls').description('quarantined images with the deployment that failed and why').option('--environment <id>', 'environment (default "default")'), { watch: 'quarantined image' }).action(
    action((ctx, o) => quarantineLs(o, ctx)),
  );
  apiOptions(quarantine.command('rm').argument('<image>', 'image reference or digest').description('release an image: it may be deployed again').option('--environment <id>', 'environment (default "default")')).action(
    action((ctx, o, [image]) => quarantineRm(image!, o, ctx)),
  );
  apiOptions(deployments.command('promote').argument('<id>').description("point the environment's domains at this (ready) deployment; a canary in progress skips to 100%")).action(
    action((ctx, o, [id]) => deploymentsPromote(id!, o, ctx)),
  );
  apiOptions(deployments.command('abort').argument('<id>').description('roll a canary or blue-green in progress back to the stable deployment')).action(
    action((ctx, o, [id]) => deploymentsAbort(id!, o, ctx)),
  );

  const features = program.command('features').description("a workspace's feature flags: multiRegion, autoScaling, blueGreen, canary");
  apiOptions(features.command('get').argument('<workspace>').description('the flags in effect (its own, else ctrl\'s --default-features)')).action(
    action((ctx, o, [ws]) => featuresGet(ws!, o, ctx)),
  );
  apiOptions(features.command('set').argument('<workspace>').argument('<flag=on|off...>').description('turn flags on or off, e.g. canary=off autoScaling=on')).action(
    action((ctx, o, [ws, settings]) => featuresSet(ws!, settings as unknown as string[], o, ctx)),
  );

  const sentinels = program.command('sentinels').description('list and deploy sentinels');
  listOptions(
    sentinels
      .command('ls')
      .description('list sentinels')
      .option('--environment <id>', 'only this environment')
      .option('--region <region>', 'only this region')
      .option('--limit <n>', 'page size (default 500)', intArg)
      .option('--after <id>', 'continue after this sentinel id'),
    { watch: 'sentinel' },
  ).action(action((ctx, o) => sentinelsLs(o, ctx)));
  apiOptions(
    sentinels
      .command('deploy')
      .argument('<id>')
      .description('deploy a sentinel (fields not given keep their value); waits for READY or FAILED')
      .option('--image <image>', 'new image')
      .option('--replicas <n>', 'new replica count', intArg)
      .option('--no-wait', 'return once the deploy is queued'),
  ).action(action((ctx, o, [id]) => sentinelsDeploy(id!, o, ctx)));

  listOptions(program.command('regions').description('regions and their agents').command('ls').description('status, last seen, lag and leader of every region'), { watch: 'region' }).action(
    action((ctx, o) => regionsLs(o, ctx)),
  );

  const invocations = program.command('invocations').description('workflow engine invocations (operators)');
  listOptions(
    invocations
      .command('ls')
      .description('list invocations, newest first')
      .option('--status <status>', 'scheduled|queued|ready|running|suspended|completed|failed|cancelled')
      .option('--target <service>', 'service name, e.g. DeployService')
      .option('--limit <n>', 'at most this many (default 100)', intArg),
  ).action(action((ctx, o) => invocationsLs(o, ctx)));
  apiOptions(invocations.command('show').argument('<id>').description('one invocation with its journal')).action(action((ctx, o, [id]) => invocationsShow(id!, o, ctx)));
  apiOptions(invocations.command('cancel').argument('<id>').description('cancel an invocation')).action(action((ctx, o, [id]) => invocationsCancel(id!, o, ctx)));

  const rollout = program.command('rollout').description('fleet-wide sentinel image rollouts in waves');
  apiOptions(
    rollout
      .command('start')
      .description('roll a sentinel image across the fleet in waves')
      .requiredOption('--image <image>', 'the new sentinel image')
      .option('--waves <list>', 'cumulative percentages, increasing, ending at 100 (default 1,5,25,50,100)', percentListArg)
      .option('--slack-webhook <url>', 'post progress to this Slack incoming webhook'),
  ).action(action((ctx, o) => rolloutStart(o as { image: string }, ctx), (f) => ({ image: '--image', wavePercentages: '--waves', slackWebhookUrl: '--slack-webhook' })[f.split('.')[0]!]));
  apiOptions(
    rollout
      .command('status')
      .description('the current rollout, wave by wave (exit 1 when paused)')
      .option('--watch', 'follow it live until it stops rolling'),
  ).action(action((ctx, o) => rolloutStatus(o, ctx)));
  for (const [name, what] of [
    ['resume', 'continue a paused rollout, skipping the wave that failed'],
    ['cancel', 'stop after the running wave; updated sentinels keep the new image'],
    ['rollback', 'put every sentinel the rollout updated back on its previous image'],
  ] as const) {
    apiOptions(rollout.command(name).description(what)).action(action((ctx, o) => rolloutAction(name, o, ctx)));
  }

  registerTenancyCommands(program, apiOptions, listOptions, action);
  registerCompletion(program, { io: () => deps.io ?? processIo(), env: deps.env ?? {}, cwd: deps.cwd ?? process.cwd(), setExitCode });
}
