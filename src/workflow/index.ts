// Workflows: the durable services that move deployments and sentinels toward their desired
// state, built on the engine in ./engine (which knows nothing about deployments).
//
// - deploy.ts: DeployService, object keyed by deployment id: pending → ready/failed, or, with a
//   canary or blue-green strategy, → ready/rolled_back through canary.ts / blue-green.ts (the
//   traffic walk runs inside the same invocation, so promote/abort reach it as a stored command
//   plus a wake-up of its shared notifyInstances); walk.ts: the traffic transactions both share
//   (start, switch, rollback), each comparing the table with what the walk last wrote.
// - strategy.ts: the strategy schema and duration parsing; traffic.ts: routing-table changes,
//   the pure canary split, and the one lock order of every transaction that touches the table
//   with deployments (the table first); analysis.ts: the Prometheus gate (pure judgement + one query).
// - sentinel.ts: SentinelService, object keyed by sentinel id: merge config, wait for krane to
//   report convergence (NotifyReady, shared), 10-minute timeout by default.
// - desired-state.ts: DesiredStateService, object keyed by deployment id: stop / start.
// - rollout.ts: SentinelRolloutService, object keyed by `singleton`: fleet image rollouts in
//   waves (waves.ts computeWaves), resume / cancel / rollbackAll; slack.ts posts progress.
// - outbound.ts, outbound-post.ts: where ctrl's own outbound requests (webhooks) may go, and
//   the one sender that enforces it on the connection itself.
// - secrets.ts: which workflow data are credentials, redacted in invocation views.
// - spec.ts: the deployment spec (API body, createDeployment input, rollback copy) in one schema.
// - status-hooks.ts: what a krane status report wakes (a waiting deploy, a sentinel deploy).
// - commands.ts: create / rollback / promote / start / stop as the API calls them, and the
//   recovery sweep for deployments whose workflow never started. Each takes an `alongside`
//   callback its caller's audit row rides on, in the transaction that makes the change.
// - progress.ts, build.ts: the pure readiness rule and the pluggable image builder.
// - wait.ts: waiting on krane's reports: awakeable + periodic re-check + deadline, and an
//   optional offline check that ends the wait when a region stays offline past the grace.
// - regions.ts: the region registry (liveness, lag, leader; `region.status` announced once
//   across replicas), the known-region check and the offline check; rollout-regions.ts: what
//   rollouts ask about regions (offline sentinels are skipped; failed-but-written are reverted).
// - audit-cleanup.ts: the audit trail's retention sweep (--audit-retention), on every replica.
//
// Imports the kernel, store, ./engine, tracing and sync's wire and liveness; never http, cli,
// modes, web or kube-sim (.dependency-cruiser.cjs, workflows-know-no-transport). Imported by
// http (routes call commands and the region registry) and modes/ctrl.ts; ./engine may not
// import this code back, which keeps the engine free of deployments.
//
// Keying: everything about one deployment runs on its key in arrival order; different
// deployments run concurrently. State rows and outbox rows are written only inside runTx steps,
// so a replay after a crash never writes twice.
import type { Logger } from '../log';
import type { Sql } from '../store';
import type { Engine } from './engine';
import type { Builder } from './build';
import { deployService, type DeployServiceDef } from './deploy';
import { desiredStateService, type DesiredStateServiceDef } from './desired-state';
import { sentinelService, type SentinelServiceDef } from './sentinel';
import { statusHooks, type StatusHooks } from './status-hooks';
import { rolloutService, type RolloutServiceDef } from './rollout';
import { slackNotifier, type SlackNotifierDef } from './slack';
import type { OutboundPolicy } from './outbound';
import { noMetrics, type WorkflowMetrics } from './metrics';
import type { CommandDeps } from './commands';

export * from './build';
export * from './commands';
export * from './deploy';
export * from './desired-state';
export * from './progress';
export * from './sentinel';
export * from './status-hooks';
export * from './rollout';
export * from './slack';
export * from './outbound';
export * from './outbound-post';
export * from './secrets';
export * from './waves';
export * from './metrics';

import type { OfflineCheck } from './regions';
import type { RolloutRegions } from './rollout-regions';

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
  /** Lets fleet rollouts skip offline regions' sentinels (src/workflow/rollout-regions.ts). */
  rolloutRegions?: RolloutRegions;
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
  const deploy = engine.register(
    deployService({
      sql,
      builder: cfg.builder,
      sentinel,
      timeoutMs: cfg.deployTimeoutMs,
      recheckMs,
      apexDomain: cfg.apexDomain,
      sentinelDefaults: { image: cfg.sentinelImage, ...(cfg.sentinelSize ?? SENTINEL_SIZE) },
      metrics: cfg.metrics ?? noMetrics,
      offline: cfg.offline,
      outbound: cfg.outbound,
    }),
  );
  const desiredState = engine.register(desiredStateService({ sql, deploy, apexDomain: cfg.apexDomain }));
  const slack = engine.register(slackNotifier(cfg.outbound ? { outbound: cfg.outbound } : {}));
  const rollout = engine.register(rolloutService({ sql, sentinel, slack, regions: cfg.rolloutRegions }));
  const hooks = statusHooks({ sql, engine, deploy, sentinel, logger });
  return { sentinel, deploy, desiredState, rollout, slack, hooks, commands: { sql, engine, deploy, desiredState, apexDomain: cfg.apexDomain, buildRoot: cfg.buildRoot } };
}
