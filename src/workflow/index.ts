// Workflows: the durable services that move deployments and sentinels toward their desired
// state, built on the engine in ./engine (which knows nothing about deployments). One subfolder
// per capability, each with its own note:
//
// - deploy/: a deployment's life. DeployService (pending → ready/failed), the stop/start
//   service, the commands the API calls (create, rollback, promote, start, stop, the recovery
//   sweep), admission (features, quotas, regions), the spec schema, builds, and waiting on
//   krane's reports.
// - progressive/: traffic as desired state. The canary and blue-green walks, the routing-table
//   transactions and their lock order, the strategy schema, analysis (threshold and the
//   comparing judge in progressive/judge/) and the quarantine of rolled-back images.
// - fleet/: sentinels. SentinelService (merge config, wait for convergence), the fleet rollout
//   in waves, what rollouts ask about regions, and its Slack posts.
// - outbound/: ctrl's own outbound requests (where webhooks and Prometheus queries may go, the
//   one sender that enforces it on the connection) and which workflow data are credentials.
//
// Beside them, shared by several: status-hooks.ts (what a krane status report wakes: a waiting
// deploy, a sentinel deploy), regions.ts (the region registry: liveness, lag, leader;
// `region.status` announced once across replicas; the known-region and offline checks),
// metrics.ts, audit-cleanup.ts (the audit trail's retention sweep, on every replica), and this
// file, which registers every service with the engine.
//
// Imports the kernel, store, ./engine, tracing and sync's wire and liveness; never http, cli,
// modes, web or kube-sim (.dependency-cruiser.cjs, workflows-know-no-transport). Imported by
// http (routes call commands and the region registry) and modes/ctrl.ts; ./engine may not
// import this code back, which keeps the engine free of deployments. Subfolders import each
// other's files directly, never through these index files, so no index sits in a cycle.
//
// Keying: everything about one deployment runs on its key in arrival order; different
// deployments run concurrently. State rows and outbox rows are written only inside runTx steps,
// so a replay after a crash never writes twice.
import type { Logger } from '../log';
import type { Sql } from '../store';
import type { Engine } from './engine';
import type { Builder } from './deploy/build';
import { deployService, type DeployServiceDef } from './deploy/deploy';
import { desiredStateService, type DesiredStateServiceDef } from './deploy/desired-state';
import { sentinelService, type SentinelServiceDef } from './fleet/sentinel';
import { statusHooks, type StatusHooks } from './status-hooks';
import { rolloutService, type RolloutServiceDef } from './fleet/rollout';
import { slackNotifier, type SlackNotifierDef } from './fleet/slack';
import { scaleDownService, type ScaleDownServiceDef } from './progressive/scale-down';
import type { OutboundPolicy } from './outbound/policy';
import { noMetrics, type WorkflowMetrics } from './metrics';
import type { CommandDeps } from './deploy/commands';
import type { Feature } from './deploy/features';

export * from './deploy/build';
export * from './deploy/commands';
export * from './deploy/deploy';
export * from './deploy/desired-state';
export * from './deploy/progress';
export * from './fleet/sentinel';
export * from './status-hooks';
export * from './fleet/rollout';
export * from './fleet/slack';
export * from './fleet/rollout-metrics';
export * from './outbound/policy';
export * from './outbound/post';
export * from './outbound/secrets';
export * from './fleet/waves';
export * from './metrics';

import type { OfflineCheck } from './regions';
import type { RolloutRegions } from './fleet/rollout-regions';

export interface WorkflowConfig {
  builder: Builder;
  deployTimeoutMs: number;
  sentinelTimeoutMs: number;
  /** Backstop re-check of a deploy waiting for instances. */
  recheckMs?: number;
  apexDomain: string;
  /** Image of sentinels the deploy workflow creates; their size is SENTINEL_SIZE unless given. */
  sentinelImage: string;
  sentinelSize?: SentinelSize;
  /** Build contexts must lie in this directory (--build-root); absent: no builds. */
  buildRoot?: string | undefined;
  /** Where webhook posts may go (default: public https hosts only). */
  outbound?: OutboundPolicy;
  metrics?: WorkflowMetrics;
  /** Ends deploy and sentinel waits on a region offline past the grace (src/workflow/regions.ts). */
  offline?: OfflineCheck;
  /** Lets fleet rollouts skip offline regions' sentinels (src/workflow/fleet/rollout-regions.ts). */
  rolloutRegions?: RolloutRegions;
  /** Regions of a deploy naming none whose environment has none (--default-regions). */
  defaultRegions?: readonly string[];
  /** Flags of workspaces that never set theirs (--default-features); absent: all on. */
  defaultFeatures?: readonly Feature[];
}

export interface SentinelSize {
  replicas: number;
  cpuMillicores: number;
  memoryMib: number;
}

/**
 * Size of a sentinel the deploy workflow creates; fleet operations change it later. Two
 * replicas so one can restart (the PDB keeps one up); 250m / 256 MiB carry a small
 * environment's traffic and are cheap enough to give every environment in every region.
 */
export const SENTINEL_SIZE: SentinelSize = { replicas: 2, cpuMillicores: 250, memoryMib: 256 };

export interface Workflows {
  sentinel: SentinelServiceDef;
  deploy: DeployServiceDef;
  desiredState: DesiredStateServiceDef;
  scaleDown: ScaleDownServiceDef;
  rollout: RolloutServiceDef;
  slack: SlackNotifierDef;
  hooks: StatusHooks;
  commands: CommandDeps;
}

/**
 * 5 s: reports normally wake a waiting deploy within milliseconds; the re-check only matters
 * when a wake-up was lost, and each one costs a journal entry.
 */
const DEFAULT_RECHECK_MS = 5_000;

/** Registers every workflow with the engine (before engine.start()). */
export function registerWorkflows(engine: Engine, sql: Sql, cfg: WorkflowConfig, logger: Logger): Workflows {
  const recheckMs = cfg.recheckMs ?? DEFAULT_RECHECK_MS;
  const sentinel = engine.register(sentinelService({ sql, timeoutMs: cfg.sentinelTimeoutMs, recheckMs, offline: cfg.offline }));
  const scaleDown = engine.register(scaleDownService({ sql, apexDomain: cfg.apexDomain }));
  const deploy = engine.register(
    deployService({
      sql,
      builder: cfg.builder,
      sentinel,
      scaleDown,
      timeoutMs: cfg.deployTimeoutMs,
      recheckMs,
      apexDomain: cfg.apexDomain,
      sentinelDefaults: { image: cfg.sentinelImage, ...(cfg.sentinelSize ?? SENTINEL_SIZE) },
      metrics: cfg.metrics ?? noMetrics,
      offline: cfg.offline,
      outbound: cfg.outbound,
      defaultFeatures: cfg.defaultFeatures,
    }),
  );
  const desiredState = engine.register(desiredStateService({ sql, deploy, apexDomain: cfg.apexDomain }));
  const slack = engine.register(slackNotifier(cfg.outbound ? { outbound: cfg.outbound } : {}));
  const rollout = engine.register(rolloutService({ sql, sentinel, slack, regions: cfg.rolloutRegions }));
  const hooks = statusHooks({ sql, engine, deploy, sentinel, logger });
  return { sentinel, deploy, desiredState, scaleDown, rollout, slack, hooks, commands: { sql, engine, deploy, desiredState, apexDomain: cfg.apexDomain, buildRoot: cfg.buildRoot, defaultRegions: cfg.defaultRegions, defaultFeatures: cfg.defaultFeatures, offline: cfg.offline } };
}
