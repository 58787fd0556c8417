// `unkey-infra ctrl`: wiring of the control plane. Returns a handle so `dev` and tests can run
// ctrl in-process and stop it.
import { boundUrl } from '../net';
import type { CtrlConfig } from '../config';
import { createLogger, type Logger } from '../log';
import { setTimeout as delay } from 'node:timers/promises';
import { agentTokens as agentTokenStore, createDb, migrate, pendingMigrations, type Sql } from '../store';
import { buildCtrlApp, createRegistry } from '../http';
import { clusterStatusRoutes } from '../http/cluster-status';
import { clusterHeartbeatRoutes, trackFeedStreams } from '../http/cluster-heartbeat';
import { regionRoutes } from '../http/api/regions';
import { offlineCheck, RegionRegistry } from '../workflow/regions';
import { rolloutRegions } from '../workflow/rollout-regions';
import { createEventHub, publicApiRoutes } from '../http/api';
import { createFeed, type FeedOptions } from '../sync/feed';
import { createEngine, type Engine, type EngineOptions } from '../workflow/engine';
import { commandBuilder, noBuilder, recoverPendingDeployments, registerWorkflows, workflowMetrics, type Builder, type Workflows } from '../workflow';

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
  builder?: Builder;
  recheckMs?: number;
  engine?: Partial<Omit<EngineOptions, 'sql' | 'logger' | 'registry'>>;
  feed?: Partial<Omit<FeedOptions, 'sql' | 'logger' | 'agentTokens'>>;
  /** How often to look for deployments whose workflow never started, and how old they must be. */
  recoverEveryMs?: number;
}

/** A pending deployment older than this lost its workflow start (the creator died in between). */
const RECOVER_AFTER_MS = 10_000;
const RECOVER_EVERY_MS = 30_000;
/** How often a ctrl started with --no-migrate checks whether the schema has caught up. */
const MIGRATION_WAIT_POLL_MS = 1_000;

// Sentinel sizing when the deploy workflow creates one; fleet operations change it later.
const SENTINEL_REPLICAS = 2;
const SENTINEL_CPU_MILLICORES = 250;
const SENTINEL_MEMORY_MIB = 256;

export async function startCtrl(cfg: CtrlConfig, overrides: CtrlOverrides = {}): Promise<CtrlHandle> {
  const logger = overrides.logger ?? createLogger(cfg.logLevel, { service: 'ctrl' });
  const sql = createDb(cfg.databaseUrl, { applicationName: 'unkey-infra-ctrl' });
  // Shutdown runs in a fixed order whatever got started: the feed first (open long polls get
  // their `end` line), then the server (no status report is accepted that could not send its
  // wake-up), then the engine (hands back leases), then LISTEN, then the pool. Each stage is
  // registered once it exists; close() is idempotent.
  type Stop = () => Promise<void>;
  const stages: { recover?: Stop; feed?: Stop; app?: Stop; engine?: Stop; hub?: Stop; regions?: Stop } = {};
  let closing: Promise<void> | undefined;
  const closeAll = () =>
    (closing ??= (async () => {
      for (const stop of [stages.recover, stages.regions, stages.feed, stages.app, stages.engine, stages.hub, () => sql.end({ timeout: 5 })]) {
        if (stop) await stop().catch((err) => logger.error({ err }, 'error while stopping'));
      }
    })());
  try {
    if (!cfg.noMigrate) {
      const r = await migrate(sql);
      logger.info({ applied: r.applied, skipped: r.skipped }, 'migrations done');
    }
    const registry = createRegistry({ service: 'ctrl' });
    const engine = createEngine({ sql, logger: logger.child({ part: 'engine' }), registry, leaseMs: cfg.engineLease, ...overrides.engine });
    const workflows = registerWorkflows(
      engine,
      sql,
      {
        builder: overrides.builder ?? (cfg.buildCommand ? commandBuilder(cfg.buildCommand) : noBuilder),
        deployTimeoutMs: cfg.deployTimeout,
        sentinelTimeoutMs: cfg.sentinelTimeout,
        ...(overrides.recheckMs ? { recheckMs: overrides.recheckMs } : {}),
        apexDomain: cfg.apexDomain,
        sentinelDefaults: { image: cfg.sentinelImage, replicas: SENTINEL_REPLICAS, cpuMillicores: SENTINEL_CPU_MILLICORES, memoryMib: SENTINEL_MEMORY_MIB },
        metrics: workflowMetrics(registry, sql),
        offline: offlineCheck(sql, cfg.agentOfflineAfter, cfg.offlineGrace),
        rolloutRegions: rolloutRegions(sql, cfg.agentOfflineAfter),
      },
      logger.child({ part: 'workflows' }),
    );
    const feed = createFeed({ sql, logger: logger.child({ part: 'feed' }), agentTokens: cfg.agentTokens, ...overrides.feed });
    feed.registerMetrics(registry);
    const hub = await createEventHub(sql);
    const regions = new RegionRegistry({ sql, logger: logger.child({ part: 'regions' }), offlineAfterMs: cfg.agentOfflineAfter, offlineGraceMs: cfg.offlineGrace });
    regions.registerMetrics(registry);
    stages.hub = () => hub.close();

    const { app } = await buildCtrlApp({
      sql,
      logger,
      registry,
      checks: [engine.readinessCheck(), feed.readinessCheck()],
      routes: [
        (a) => (feed.routes(a), trackFeedStreams(a, regions)),
        clusterHeartbeatRoutes({ sql, agentTokens: cfg.agentTokens, regions }),
        regionRoutes({ adminToken: cfg.adminToken, regions }),
        clusterStatusRoutes({ sql, agentTokens: cfg.agentTokens, hooks: workflows.hooks }),
        publicApiRoutes({ adminToken: cfg.adminToken, workflows, engine, hub }),
      ],
    });
    stages.app = () => app.close();
    const listen = async () => {
      await app.listen({ host: cfg.listen.host, port: cfg.listen.port });
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
    // still accepts them; the in-memory copy spares a lookup per long poll.
    for (const [region, token] of Object.entries(cfg.agentTokens)) await agentTokenStore.ensureAgentToken(sql, region, token);

    await engine.start();
    stages.engine = () => engine.stop();
    await feed.start();
    stages.feed = () => feed.close();
    regions.start();
    stages.regions = () => regions.close();

    const recover = setInterval(() => {
      recoverPendingDeployments(workflows.commands, RECOVER_AFTER_MS)
        .then((n) => n && logger.warn({ count: n }, 'started deploy workflows of stranded deployments'))
        .catch((err) => logger.warn({ err }, 'pending deployment recovery failed'));
    }, overrides.recoverEveryMs ?? RECOVER_EVERY_MS);
    recover.unref();
    stages.recover = async () => clearInterval(recover);

    url ??= await listen();
    return { url, sql, engine, workflows, close: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
