// Progressive delivery: traffic is desired state, moved in steps and judged at each.
//
// - canary.ts, blue-green.ts: the two walks, run inside the deployment's DeployService
//   invocation; walk.ts: the traffic transactions both share (start, switch, rollback), each
//   comparing the table with what the walk last wrote, so another writer's change is noticed.
// - scale-down.ts: ScaleDownService, object keyed by the old (blue) deployment's id: its stop
//   after a blue-green's scaleDownDelay, as a delayed call of its own (no key held meanwhile),
//   skipped when a later command or traffic moved it.
// - traffic.ts: routing-table changes, the pure canary split, and the one lock order of every
//   transaction that touches the table with deployments (the table first).
// - strategy.ts: the strategy schema and duration parsing.
// - analysis.ts: the Prometheus threshold gate (pure judgement + one query); judgement.ts: one
//   analysis check, threshold or compare (the canary's series against its stable's per region,
//   read by range-query.ts, judged by the pure judge/), and its evidence, stored and announced
//   by a database step of its own after the check (once, whatever the check's replays).
// - quarantine.ts: rolled-back images, refused per environment unless forced.
// - metrics.ts: split traffic weights and quarantined images as Prometheus gauges.
//
// Keying: the walk holds its deployment's key; every table write takes the environment's
// traffic lock first.
export * from './strategy';
export * from './traffic';
export { registerProgressiveMetrics } from './metrics';
