// Sentinels, one per environment and region, and rolling their image across the fleet.
//
// - sentinel.ts: SentinelService, object keyed by sentinel id: merge config, wait for krane to
//   report convergence (NotifyReady, shared), 10-minute timeout by default.
// - rollout.ts: SentinelRolloutService, object keyed by `singleton`: fleet image rollouts in
//   waves (waves.ts computeWaves, cumulative percentages), resume / cancel / rollbackAll.
// - rollout-regions.ts: what rollouts ask about regions (offline sentinels are skipped;
//   failed-but-written are reverted).
// - slack.ts: progress posts, which never fail the rollout.
// - rollout-metrics.ts: the rollout's state and its sentinels by outcome, as Prometheus gauges.
//
// Keying: a sentinel's deploys run on its key; there is one rollout at a time (`singleton`).
export * from './sentinel';
export * from './rollout';
export * from './waves';
export * from './slack';
export * from './rollout-metrics';
