// The store: everything that talks SQL to PostgreSQL, apart from the workflow engine's own
// tables (src/workflow/engine owns those).
//
// - db.ts: the porsager `postgres` client (camelCased result columns) and `withTx`;
//   pool-metrics.ts: how long a query waits for a pooled connection (db_pool_acquire_seconds).
// - migrate.ts + migrations.ts: numbered files from sql/, each applied in its own transaction
//   under an advisory lock, recorded with a checksum in schema_migrations.
// - One module per table. Functions take a `Queryable` (the pool or an open transaction) so
//   callers compose them into one transaction when they must commit together.
// - routes.ts: each environment's routing table (traffic as desired state).
// - desired-state.ts: the desired-state reads behind the change feed (a region's snapshot,
//   desired state of many resources); changes.ts: the outbox; events.ts: live events over
//   NOTIFY, published in the writer's transaction; system.ts: the feed epoch, the database
//   history it belongs to (fenceFeed renews it after a failover or restore) and the oldest
//   open transaction on the server; agent-tokens.ts: region-scoped agent tokens, stored
//   hashed, revocations announced by NOTIFY; regions.ts: the known regions (from agent tokens)
//   and their agents' liveness rows (region_liveness); api-keys.ts: scoped API keys (hashed,
//   revocations by NOTIFY); audit.ts: the audit trail, written in the caller's transaction;
//   analysis-checks.ts: the evidence of every canary analysis verdict (issue 27);
//   hostname-claims.ts: one owner per hostname, the database's key deciding (issue 32).
// - versions.ts, quarantine.ts, features.ts: each environment's version history (unique index +
//   counter row), its quarantined images, and workspace feature flags (issue 25);
//   autoscalers.ts: what krane reports of autoscaled deployments' HorizontalPodAutoscalers;
//   idempotency.ts: the Idempotency-Key of API calls that create (issue 35), recorded in the
//   call's own transaction.
//
// pg_snapshot_xmin is cluster-wide: any long transaction on the same PostgreSQL server (even in
// another database) holds the feed back until it ends.
//
// Rule of the outbox: every mutation of deployment_topology, sentinels' desired fields,
// cilium_network_policies or environment_routes goes through topology.ts / sentinels.ts /
// cilium.ts / routes.ts, which insert the deployment_changes row in the same transaction
// (changes.ts#recordChange). Keep those transactions short and free of network calls: an open
// writer holds back pg_snapshot_xmin and so delays every agent's feed.
//
// May import: the kernel and tracing only; never http, sync, workflow, kube, cli, modes or web
// (.dependency-cruiser.cjs, store-returns-rows). Imported by sync, workflow, http and modes; the
// engine may take only db.ts and retryable.ts, and krane's src/kube none of it (no database).
export * from './db';
export { registerPoolMetrics } from './pool-metrics';
export * from './retryable';
export * from './tx';
export * from './migrate';
export * from './migrations';
export * as changes from './changes';
export * as tenancy from './tenancy';
export * as deployments from './deployments';
export * as topology from './topology';
export * as sentinels from './sentinels';
export * as cilium from './cilium';
export * as instances from './instances';
export * as applyFailures from './apply-failures';
export * as domains from './domains';
export * as hostnameClaims from './hostname-claims';
export * as routes from './routes';
export * as agentTokens from './agent-tokens';
export * as system from './system';
export * as events from './events';
export * as desiredState from './desired-state';
export * as rolloutItems from './rollout-items';
export * as apiKeys from './api-keys';
export * as audit from './audit';
export { removeEnvironment } from './environment-removal';
export * as analysisChecks from './analysis-checks';
export * as versions from './versions';
export * as quarantine from './quarantine';
export * as features from './features';
export * as autoscalers from './autoscalers';
export * as idempotency from './idempotency';
