// `unkey-infra ctrl`: wiring of the control plane. Returns a handle so `dev` and tests can run
// ctrl in-process and stop it.
import { boundUrl } from '../net';
import { buildToolEnv, ConfigError, type CtrlConfig } from '../config';
import { createLogger, type Logger } from '../log';
import { setTimeout as delay } from 'node:timers/promises';
import { apiKeys, createDb, hostnameClaims, listenWorks, migrate, pendingMigrations, registerPoolMetrics, type Sql } from '../store';
import { AgentAuth, buildCtrlApp, createRegistry, LISTEN_BACKLOG, tokensEqual } from '../http';
import { KeyAuth, type KeyClock } from '../http/keys';
import { auditHook } from '../http/audit';
import { startAuditCleanup } from '../workflow/audit-cleanup';
import { clusterFeedRoutes } from '../http/cluster-feed';
import { clusterStatusRoutes } from '../http/cluster-status';
import { clusterHeartbeatRoutes, trackFeedStreams } from '../http/cluster-heartbeat';
import { regionRoutes } from '../http/api/regions';
import { offlineCheck, RegionRegistry } from '../workflow/regions';
import { rolloutRegions } from '../workflow/fleet/rollout-regions';
import { createEventHub, publicApiRoutes, type EventSocketOptions } from '../http/api';
import { createFeed, DEFAULT_MAX_CONCURRENT_SNAPSHOTS, type FeedOptions } from '../sync/feed';
import { createEngine, type Engine, type EngineOptions } from '../workflow/engine';
import { engineTraceHooks, startTracing, tracingEnabled } from '../tracing';
import { commandBuilder, noBuilder, registerRolloutMetrics, registerWorkflows, startRecoverySweep, workflowMetrics, type Builder, type WorkflowConfig, type Workflows } from '../workflow';

export interface CtrlHandle {
  url: string;
  sql: Sql;
  engine: Engine;
  workflows: Workflows;
  close(): Promise<void>;
}

/** Overrides for tests and `dev`: faster loops, a builder, a logger. */
export interface CtrlOverrides {
  logger?: Logger;
  /** Replaces the command builder; build contexts are still checked against --build-root. */
  builder?: Builder;
  recheckMs?: number;
  engine?: Partial<Omit<EngineOptions, 'sql' | 'logger' | 'registry'>>;
  feed?: Partial<Omit<FeedOptions, 'sql' | 'logger'>>;
  /** How often to look for deployments whose workflow never started, and how old they must be. */
  recoverEveryMs?: number;
  /** How old a pending deployment must be before the sweep restarts it. */
  recoverAfterMs?: number;
  /** The event WebSocket's ping interval and per-credential and per-workspace caps. */
  events?: EventSocketOptions;
  /** A workspace's caps (live keys); tests make them small. */
  tenantCaps?: { keysPerWorkspace?: number };
  /** The API keys' clock: rate-limit refills and expiry (tests drive them with their own). */
  keyClock?: KeyClock;
}

/** How long a NOTIFY may take to reach ctrl's own LISTEN at start: milliseconds on a healthy
 *  database, so this only fails a LISTEN that hears nothing (a transaction pooler). */
const LISTEN_CHECK_MS = 10_000;

/** How often a ctrl started with --no-migrate checks whether the schema has caught up. */
const MIGRATION_WAIT_POLL_MS = 1_000;

/** The workflows' settings from ctrl's configuration (the builder is the command one unless a
 *  test or `dev` gives its own). */
function workflowConfig(cfg: CtrlConfig, overrides: CtrlOverrides, logger: Logger, sql: Sql, metrics: WorkflowConfig['metrics']): WorkflowConfig {
  const builder =
    overrides.builder ??
    (cfg.buildCommand && cfg.buildRoot
      ? commandBuilder({ command: cfg.buildCommand, root: cfg.buildRoot, env: buildToolEnv(), logger: logger.child({ part: 'build' }) })
      : noBuilder);
  return {
    builder,
    buildRoot: cfg.buildRoot,
    outbound: { allow: cfg.outboundAllow },
    deployTimeoutMs: cfg.deployTimeout,
    sentinelTimeoutMs: cfg.sentinelTimeout,
    ...(overrides.recheckMs ? { recheckMs: overrides.recheckMs } : {}),
    apexDomain: cfg.apexDomain,
    sentinelImage: cfg.sentinelImage,
    ...(metrics ? { metrics } : {}),
    offline: offlineCheck(sql, cfg.agentOfflineAfter, cfg.offlineGrace),
    rolloutRegions: rolloutRegions(sql, cfg.agentOfflineAfter),
    defaultRegions: cfg.defaultRegions,
    defaultFeatures: cfg.defaultFeatures,
  };
}

// Over 80 lines on purpose: ctrl's parts wired in start order (and their stages for close);
// split into helpers the order that matters would no longer read top to bottom.
export async function startCtrl(cfg: CtrlConfig, overrides: CtrlOverrides = {}): Promise<CtrlHandle> {
  const logger = overrides.logger ?? createLogger(cfg.logLevel, { service: 'ctrl' });
  const sql = createDb(cfg.databaseUrl, { applicationName: 'unkey-infra-ctrl', listenUrl: cfg.databaseDirectUrl });
  // Full syncs only; as many connections as full syncs may run at once.
  const readSql = cfg.databaseReadUrl ? createDb(cfg.databaseReadUrl, { max: DEFAULT_MAX_CONCURRENT_SNAPSHOTS, applicationName: 'unkey-infra-ctrl-read' }) : undefined;
  const tracing = startTracing({ serviceName: 'ctrl', endpoint: cfg.otlpEndpoint });
  // Shutdown runs in a fixed order whatever got started: the feed first (open long polls get
  // their `end` line), then the server (no status report is accepted that could not send its
  // wake-up), then the engine (hands back leases), then LISTEN, then the pool. Each stage is
  // registered once it exists; close() is idempotent.
  type Stop = () => Promise<void>;
  const stages: { recover?: Stop; feed?: Stop; app?: Stop; engine?: Stop; hub?: Stop; auth?: Stop; keys?: Stop; regions?: Stop } = {};
  let closing: Promise<void> | undefined;
  const closeAll = () =>
    (closing ??= (async () => {
      for (const stop of [stages.recover, stages.regions, stages.feed, stages.app, stages.engine, stages.hub, stages.auth, stages.keys, () => sql.end({ timeout: 5 }), async () => readSql?.end({ timeout: 5 }), () => tracing.shutdown()]) {
        if (stop) await stop().catch((err) => logger.error({ err }, 'error while stopping'));
      }
    })());
  try {
    // Every doorbell (the feed's, the engine's wake-ups, token revocations) is a NOTIFY: a
    // LISTEN that hears nothing (through a transaction pooler) would lose them all silently.
    if (!(await listenWorks(sql, LISTEN_CHECK_MS))) {
      throw new ConfigError([
        `databaseDirectUrl: a NOTIFY sent through --database-url did not reach a LISTEN on ${cfg.databaseDirectUrl ? '--database-direct-url' : 'it'} within ${LISTEN_CHECK_MS / 1000} s; ` +
          'through a pooler in transaction mode (PgBouncer) LISTEN needs a direct session to the primary: give it as --database-direct-url',
      ]);
    }
    if (!cfg.noMigrate) {
      const r = await migrate(sql);
      logger.info({ applied: r.applied, skipped: r.skipped }, 'migrations done');
    }
    const registry = createRegistry({ service: 'ctrl' });
    registerPoolMetrics(registry, sql);
    // Only with tracing on does the engine store and read trace carriers.
    const tracingOpt = tracingEnabled() ? { tracing: engineTraceHooks } : {};
    const engine = createEngine({ sql, logger: logger.child({ part: 'engine' }), registry, leaseMs: cfg.engineLease, ...tracingOpt, ...overrides.engine });
    const workflows = registerWorkflows(engine, sql, workflowConfig(cfg, overrides, logger, sql, workflowMetrics(registry, sql)), logger.child({ part: 'workflows' }));
    registerRolloutMetrics(registry, { engine, def: workflows.rollout, sql });
    // One AgentAuth for the whole cluster API, so a revocation both refuses the token and cuts
    // its feed streams.
    const agentAuth = new AgentAuth({ sql, configured: cfg.agentTokens, adminToken: cfg.adminToken, logger: logger.child({ part: 'auth' }) });
    stages.auth = () => agentAuth.close();
    const keys = new KeyAuth({
      sql,
      logger: logger.child({ part: 'keys' }),
      ratePerSecond: cfg.keyRateLimit,
      workspaceRatePerSecond: cfg.workspaceRateLimit,
      ...(overrides.keyClock ? { clock: overrides.keyClock } : {}),
    });
    stages.keys = () => keys.close();
    const feed = createFeed({ sql, readSql, logger: logger.child({ part: 'feed' }), ...overrides.feed });
    feed.registerMetrics(registry);
    const hub = await createEventHub(sql);
    const regions = new RegionRegistry({ sql, logger: logger.child({ part: 'regions' }), offlineAfterMs: cfg.agentOfflineAfter, offlineGraceMs: cfg.offlineGrace });
    regions.registerMetrics(registry);
    stages.hub = () => hub.close();

    const { app } = await buildCtrlApp({
      sql,
      logger,
      registry,
      limits: { requestTimeoutMs: cfg.requestTimeout, idleTimeoutMs: cfg.idleTimeout, maxConnections: cfg.maxConnections },
      checks: [engine.readinessCheck(), feed.readinessCheck()],
      hooks: [(a) => auditHook(a, sql)],
      // A key is known when KeyAuth finds it live; any other token must match the admin or an agent's.
      knownCredential: async (token) => tokensEqual(token, cfg.adminToken) || (await agentAuth.authenticate(token)) !== undefined || (token.startsWith(apiKeys.KEY_PREFIX) && !('problem' in (await keys.authenticate(token)))),
      routes: [
        (a) => (clusterFeedRoutes({ sql, feed, auth: agentAuth })(a), trackFeedStreams(a, regions)),
        clusterHeartbeatRoutes({ sql, auth: agentAuth, regions }),
        regionRoutes({ adminToken: cfg.adminToken, keys, regions }),
        clusterStatusRoutes({ sql, auth: agentAuth, hooks: workflows.hooks }),
        publicApiRoutes({ adminToken: cfg.adminToken, workflows, engine, hub, outbound: { allow: cfg.outboundAllow }, regions, keys, events: overrides.events, sentinelImages: cfg.sentinelImages, tenantCaps: overrides.tenantCaps }),
      ],
    });
    stages.app = () => app.close();
    const listen = async () => {
      await app.listen({ host: cfg.listen.host, port: cfg.listen.port, backlog: LISTEN_BACKLOG });
      const url = boundUrl(app.server, cfg.listen.host);
      logger.info({ url }, 'ctrl listening');
      return url;
    };
    // With --no-migrate someone else migrates (a job, another replica). Until they have, serve
    // the probes (/readyz says which migrations are pending) and start nothing that needs the
    // schema; then carry on as usual.
    let url: string | undefined;
    if (cfg.noMigrate && (await pendingMigrations(sql)).length > 0) {
      url = await listen();
      logger.warn('waiting for pending migrations (started with --no-migrate)');
      while ((await pendingMigrations(sql)).length > 0) await delay(MIGRATION_WAIT_POLL_MS);
    }
    // Configured agent tokens are also stored (hashed), so a later `ctrl` without the flag
    // still accepts them; a revoked one stays revoked (and is logged as refused).
    await agentAuth.start();
    await keys.start();
    // The apex is the platform's name: claimed here, so no environment can hold it (issue 32).
    if (!(await hostnameClaims.claimPlatformHostname(sql, cfg.apexDomain))) logger.warn({ hostname: cfg.apexDomain }, 'the apex domain is held by an environment from before hostname claims');

    await engine.start();
    stages.engine = () => engine.stop();
    await feed.start();
    stages.feed = () => feed.close();
    regions.start();
    stages.regions = () => regions.close();

    const stopRecovery = startRecoverySweep(workflows.commands, logger, {
      everyMs: overrides.recoverEveryMs,
      olderThanMs: overrides.recoverAfterMs,
    });
    const stopAuditCleanup = startAuditCleanup(sql, logger.child({ part: 'audit' }), { retentionMs: cfg.auditRetention });
    stages.recover = async () => (stopRecovery(), stopAuditCleanup());

    url ??= await listen();
    return { url, sql, engine, workflows, close: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
