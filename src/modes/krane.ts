// `unkey-infra krane`: the agent of one region. Wires the change-feed watcher to the
// ApplyController (with the drift watch that repairs hand-made changes between syncs), the
// status watchers to the reporter, and serves /livez /readyz /metrics and POST /gc/confirm.
// Returns a handle so `dev` and tests can run krane in-process and stop it.
import { boundUrl } from '../net';
import type { KubeConfig } from '@kubernetes/client-node';
import { runsInCluster, type KraneConfig } from '../config';
import { createLogger, type Logger } from '../log';
import { startTracing } from '../tracing';
import { createRegistry, type Registry } from '../http/metrics';
import { buildKraneApp } from '../http/krane-app';
import { KubeClient, loadKubeConfig } from '../kube/client';
import { ApplyController } from '../kube/apply-controller';
import { DriftWatch } from '../kube/drift';
import { instanceStartupHistogram, registerFeedMetrics, registerKubeMetrics, registerLeaderMetrics } from '../kube/metrics';
import { AutoscalerStatusWatcher, InstanceStatusWatcher, SentinelStatusWatcher } from '../kube/status';
import type { ResourceController } from '../sync/wire';
import { SENTINEL_NAMESPACE, WORKLOAD_NAMESPACE, type DesiredState, type PermanentError, type ResourceRef } from '../sync/wire';
import { ApplyOutcomes } from '../kube/outcomes';
import { StatusReporter } from '../sync/reporter';
import { Watcher } from '../sync/watcher';
import { HeartbeatSender, objectCounts } from '../sync/heartbeat';
import { LeaderElector } from '../kube/leader';
import { CredentialsKeeper } from '../kube/credentials-keeper';
import { readCredentialsFile, SENTINEL_CREDENTIALS_SECRET } from '../kube/credentials';

/** What krane needs from the change-feed watcher (src/sync/watcher.ts). */
export interface FeedWatcher {
  start(): void | Promise<void>;
  stop(): Promise<void>;
  /** Counters of src/sync/watcher.ts; readiness waits for the first completed full sync. */
  readonly stats?: { readonly snapshotsCompleted: number };
  /** Starts a full sync now (after an operator confirmed a held GC pass). */
  resync?(): void;
  /** The committed cursor, reported in heartbeats. */
  readonly cursor?: string;
}

export interface FeedWatcherOptions {
  controlPlaneUrl: string;
  token: string;
  region: string;
  controller: ResourceController;
  resyncIntervalMs: number;
  concurrency: number;
  logger: Logger;
  onPermanentFailure(ref: ResourceRef, err: PermanentError, state: DesiredState): void;
}

export type FeedWatcherFactory = (opts: FeedWatcherOptions) => FeedWatcher;

export interface KraneDeps {
  logger?: Logger;
  /**
   * After a krane that lost its Lease has closed. The process exits here (main.ts): a request
   * still hanging on a half-open link would otherwise keep it alive, neither leading nor
   * campaigning, and the pod's restart is what makes it a candidate again.
   */
  onLostLease?: () => void;
  /** Builds the change-feed watcher; default: src/sync/watcher.ts. Tests substitute their own. */
  createWatcher?: FeedWatcherFactory;
  /** A ready client configuration (tests, dev); otherwise loaded from cfg.kubeconfig. */
  kubeConfig?: KubeConfig;
  registry?: Registry;
  /** Overrides for tests: how fast the status side retries and reports. */
  tuning?: { minBackoffMs?: number; reporterFlushMs?: number; reporterRetryMs?: number; breakerResetMs?: number; heartbeatMs?: number };
}

export interface KraneHandle {
  url: string;
  controller: ApplyController;
  reporter: StatusReporter;
  api: KubeClient;
  close(): Promise<void>;
}

/**
 * Resources applied in parallel by the watcher. Enough to keep a full sync of thousands of
 * resources from being latency-bound, low enough to stay polite to the API server.
 */
const APPLY_CONCURRENCY = 16;

const defaultWatcher: FeedWatcherFactory = (o) => new Watcher(o);

// Over 80 lines on purpose: krane's parts wired in the order they must start (and, in close(),
// stop); split into helpers the order that matters would no longer read top to bottom.
export async function startKrane(cfg: KraneConfig, deps: KraneDeps = {}): Promise<KraneHandle> {
  const logger = deps.logger ?? createLogger(cfg.logLevel, { service: 'krane', region: cfg.region });
  const tracing = startTracing({ serviceName: 'krane', endpoint: cfg.otlpEndpoint });
  const registry = deps.registry ?? createRegistry({ service: 'krane', region: cfg.region });
  const api = new KubeClient(deps.kubeConfig ?? loadKubeConfig({ file: cfg.kubeconfig, inCluster: runsInCluster() }));
  const resyncMs = cfg.resyncInterval;
  const tuning = deps.tuning ?? {};

  const reporter = new StatusReporter({
    controlPlaneUrl: cfg.controlPlane,
    token: cfg.token,
    region: cfg.region,
    logger: logger.child({ part: 'reporter' }),
    registry,
    flushDelayMs: tuning.reporterFlushMs,
    retryIntervalMs: tuning.reporterRetryMs,
    breaker: { resetTimeoutMs: tuning.breakerResetMs },
  });
  const outcomes = new ApplyOutcomes(reporter);
  /** Per deployment, the desired-state generation krane last applied (its pod reports carry it). */
  const appliedGenerations = new Map<string, number>();
  const controller = new ApplyController({
    api,
    region: cfg.region,
    logger: logger.child({ part: 'controller' }),
    build: {
      imagePullSecret: cfg.imagePullSecret,
      sentinel: {
        livenessPath: cfg.sentinelLivenessPath,
        readinessPath: cfg.sentinelReadinessPath,
        ...(cfg.sentinelSecretsFile ? { credentialsSecret: SENTINEL_CREDENTIALS_SECRET } : {}),
      },
    },
    // Half the resync interval: every periodic full sync finds the inventory older than this
    // and re-lists before trusting any hash, so a resync always verifies against the cluster.
    verifyAfterMs: Math.max(1, Math.floor(resyncMs / 2)),
    onApplied: (ref, wrote, uids, state) => {
      outcomes.applied(ref, wrote);
      if (ref.type !== 'deployment_topology') return;
      // Pod reports from now on are made under this generation (src/kube/status/instances.ts).
      if (state.kind === 'deployment' && state.generation !== undefined) appliedGenerations.set(ref.id, state.generation);
      else appliedGenerations.delete(ref.id);
      // ctrl counts pods reported after the topology's last change; these may not change again.
      instancesWatch.resend(ref.id, uids);
    },
    onDeleted: (ref) => {
      if (ref.type === 'deployment_topology') appliedGenerations.delete(ref.id);
      outcomes.deleted(ref);
    },
    onRecreated: (ref, why) => outcomes.recreated(ref, why),
    gcMaxFraction: cfg.gcMaxFraction,
    onGc: (status) => reporter.gc(status),
  });
  const watchLogger = logger.child({ part: 'status' });
  const startup = instanceStartupHistogram(registry);
  const instancesWatch = new InstanceStatusWatcher({
    api, namespace: WORKLOAD_NAMESPACE, sink: reporter, logger: watchLogger, relistIntervalMs: resyncMs, minBackoffMs: tuning.minBackoffMs,
    // Standbys watch pods too (their readiness and reports stay warm), but only the leader
    // counts a startup: summed across replicas, each pod would count once per krane.
    onStartup: (seconds) => {
      if (elector?.isLeader ?? true) startup.observe(seconds);
    },
    isLeader: () => elector?.isLeader ?? true,
    currentOwner: (deploymentId) => controller.workloadOwner(deploymentId),
    appliedGeneration: (deploymentId) => appliedGenerations.get(deploymentId),
  });
  const autoscalerWatch = new AutoscalerStatusWatcher({
    api, namespace: WORKLOAD_NAMESPACE, sink: reporter, logger: watchLogger, relistIntervalMs: resyncMs, minBackoffMs: tuning.minBackoffMs,
  });
  const sentinelWatch = new SentinelStatusWatcher({
    api, namespace: SENTINEL_NAMESPACE, sink: reporter, logger: watchLogger, relistIntervalMs: resyncMs, minBackoffMs: tuning.minBackoffMs,
    // Only the leader reports sentinels: its reports carry its leadership's order (reporter.lead).
    isLeader: () => elector?.isLeader ?? true,
  });
  const credentials = await sentinelCredentials(cfg, api, controller, logger, resyncMs, () => elector?.isLeader ?? true, tuning.minBackoffMs);
  const drift = new DriftWatch({ api, controller, logger: logger.child({ part: 'drift' }), relistIntervalMs: resyncMs, minBackoffMs: tuning.minBackoffMs });
  registerKubeMetrics(registry, api, controller, {
    pods: instancesWatch.reflector,
    sentinels: sentinelWatch.deployments,
    sentinelPods: sentinelWatch.pods,
    ...Object.fromEntries(Object.entries(drift.reflectors).map(([k, r]) => [`managed:${k}`, r])),
    ...(credentials ? { credentials: credentials.reflector } : {}),
  });

  const watcher = (deps.createWatcher ?? defaultWatcher)({
    controlPlaneUrl: cfg.controlPlane,
    token: cfg.token,
    region: cfg.region,
    controller,
    resyncIntervalMs: resyncMs,
    concurrency: APPLY_CONCURRENCY,
    logger, // the watcher names its own part
    onPermanentFailure: (ref, err, state) => {
      logger.error({ resource: ref, code: err.code, err: err.message }, 'desired state cannot be applied');
      outcomes.failedPermanently(ref, err, state);
    },
  });

  const heartbeat = new HeartbeatSender({
    controlPlaneUrl: cfg.controlPlane, token: cfg.token, region: cfg.region, logger: logger.child({ part: 'heartbeat' }), intervalMs: tuning.heartbeatMs,
    source: { cursor: () => watcher.cursor, fullSyncs: () => watcher.stats?.snapshotsCompleted ?? 0, objects: objectCounts(drift.reflectors), leader: (): boolean => elector?.isLeader ?? true, drift: () => controller.drift.snapshot() },
  });
  // Only the leader streams and applies; one that loses the Lease stops its stream at once and
  // shuts down (its pod's restart policy brings it back as a candidate) rather than risk
  // applying beside the new leader. The Lease can be lost before `handle` exists (during listen).
  let lostLease = false;
  let closeAll: (() => Promise<void>) | undefined;
  // Set by close(): stopping on purpose also steps the elector down, which is not a lost Lease.
  let stopping = false;
  const stepDown = () => {
    if (stopping) return;
    lostLease = true;
    controller.close();
    void watcher.stop();
    void closeAll?.().finally(() => deps.onLostLease?.());
  };
  const elector: LeaderElector | undefined = cfg.leaderElect
    ? new LeaderElector({ kubeConfig: api.config, region: cfg.region, identity: heartbeat.agentId, logger: logger.child({ part: 'leader' }), onStartedLeading: () => {
          void watcher.start();
          credentials?.soon();
          // The new leader's word on which pods exist (a no-op until its first pod list).
          instancesWatch.reportSet();
          // Its sentinel reports are ordered under the Lease's transitions it just wrote, and it
          // says at once how every sentinel is (a standby reported none).
          reporter.lead(elector!.epoch ?? 0);
          sentinelWatch.reportAll();
        }, onStoppedLeading: stepDown })
    : undefined;
  if (watcher.stats) registerFeedMetrics(registry, watcher.stats);
  registerLeaderMetrics(registry, () => elector?.isLeader ?? true);
  const reflectors = [instancesWatch.reflector, sentinelWatch.deployments, sentinelWatch.pods, ...Object.values(drift.reflectors), ...(credentials ? [credentials.reflector] : [])];
  const app = buildKraneApp({
    logger,
    registry,
    gcConfirm: {
      token: cfg.token,
      confirm: () => {
        const approved = controller.brake.confirm();
        if (approved > 0) watcher.resync?.();
        return approved;
      },
    },
    checks: [
      { name: 'kubernetes', check: async () => (reflectors.every((r) => r.hasSynced) ? null : 'watches have not listed yet') },
      { name: 'control-plane', check: async () => (reporter.breakerState() === 'open' ? 'status reports to ctrl are failing (circuit open)' : null) },
      {
        name: 'feed',
        // A standby is ready once its watches listed: it is ready to take over, and a rolling
        // update of krane's Deployment (deploy/krane.yaml) must not wait for it to lead.
        check: async () => (watcher.stats && (elector?.isLeader ?? true) && watcher.stats.snapshotsCompleted === 0 ? 'no full sync from ctrl has completed yet' : null),
      },
    ],
  });

  instancesWatch.start();
  autoscalerWatch.start();
  sentinelWatch.start();
  drift.start();
  credentials?.start();
  try {
    if (elector) elector.start();
    else await watcher.start();
    await app.listen({ host: cfg.listen.host, port: cfg.listen.port });
    heartbeat.start();
  } catch (err) {
    controller.close();
    await Promise.allSettled([elector?.abandon(), watcher.stop(), instancesWatch.stop(), autoscalerWatch.stop(), sentinelWatch.stop(), drift.stop(), credentials?.stop(), reporter.close(), app.close()]);
    await tracing.shutdown();
    throw err;
  }
  const url = boundUrl(app.server, cfg.listen.host);
  logger.info({ url, region: cfg.region }, 'krane listening');

  let closing: Promise<void> | undefined;
  const handle: KraneHandle = {
    url,
    controller,
    reporter,
    api,
    close() {
      stopping = true;
      closing ??= (async () => {
        // Stop taking new work first, then stop watching, then deliver what is buffered.
        await Promise.all([heartbeat.stop(), elector?.stop(), watcher.stop()]);
        controller.close();
        await Promise.all([instancesWatch.stop(), autoscalerWatch.stop(), sentinelWatch.stop(), drift.stop(), credentials?.stop()]);
        await reporter.close();
        await app.close();
        await tracing.shutdown();
      })();
      return closing;
    },
  };
  closeAll = () => handle.close();
  if (lostLease) void handle.close().finally(() => deps.onLostLease?.());
  return handle;
}

/**
 * The keeper of the Secret sentinel-credentials, when krane has a credentials file. The file is
 * read once here so a missing or malformed one stops krane at start (the error names the file
 * and line, never a value) instead of leaving sentinels without their configuration.
 */
async function sentinelCredentials(cfg: KraneConfig, api: KubeClient, controller: ApplyController, logger: Logger, recheckMs: number, canWrite: () => boolean, minBackoffMs?: number): Promise<CredentialsKeeper | undefined> {
  if (!cfg.sentinelSecretsFile) {
    logger.warn('no --sentinel-secrets-file: sentinels start without database, ClickHouse and Redis credentials');
    return undefined;
  }
  await readCredentialsFile(cfg.sentinelSecretsFile);
  return new CredentialsKeeper({
    api, file: cfg.sentinelSecretsFile, namespace: SENTINEL_NAMESPACE, logger: logger.child({ part: 'credentials' }),
    // The file is re-read this often: a rotated Secret mounted into krane's pod lands within it.
    recheckMs: Math.min(recheckMs, CREDENTIALS_RECHECK_MS), canWrite, drift: controller.drift, minBackoffMs,
  });
}

/** A mounted Secret's file changes within about a minute of an update (kubelet sync period). */
const CREDENTIALS_RECHECK_MS = 60_000;
