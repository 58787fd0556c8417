// HTTP: the fastify apps ctrl and krane serve.
//
// - ctrl-app.ts builds the skeleton every ctrl route group plugs into: pino request logging,
//   the one error handler (errors.ts codes → status + `{ error: { code, message, details } }`),
//   /livez, /readyz (database reachable, migrations applied, plus checks other parts register:
//   engine, feed), and /metrics from a per-process prom-client registry. It also sets the
//   connection limits (request and idle timeouts, a connection cap; SECURITY.md).
// - Route groups are plain functions `(app) => void` registered as encapsulated plugins; auth is
//   an onRequest hook inside each group (before any body is read), so /livez and /metrics stay
//   unauthenticated.
//   - api/: the public API under /v1 (admin token or scoped API keys: permissions.ts holds the
//     rules, keys.ts authenticates keys, rate-limits them and their workspaces (rate.ts, token
//     buckets) and ends what is open under a revoked or expired one; api/guard.ts is the
//     onRequest check), the event WebSocket, /openapi.json.
// - audit.ts: the audit trail's onSend hook on the whole app (refusals, failures, calls without
//   a transaction) and auditInTx, which handlers call in the transaction that makes a change.
//   - cluster-feed.ts, cluster-status.ts, cluster-heartbeat.ts: the cluster API under
//     /v1/cluster (agent tokens, one region each; auth.ts's AgentAuth, one per process so a
//     revocation cuts streams too): the change feed (policy in src/sync/feed.ts; http → sync
//     only), desired-state lookups, krane's status reports and heartbeats. api/regions.ts:
//     GET /v1/regions. agent-text.ts: what stands for an agent's text in a log line (its
//     length and a hash; the text itself never reaches a log).
// - krane-app.ts: krane's own /livez, /readyz, /metrics.
//
// Imports the kernel, store, sync, workflow (the engine's types too), tracing and web (its
// routes); never cli, modes or kube-sim (.dependency-cruiser.cjs, http-is-not-wiring). Only
// modes imports http: store, sync, workflow, kube and cli are each forbidden to, so apps receive
// their collaborators from the mode that builds them.
export * from './ctrl-app';
export * from './health';
export * from './metrics';
export * from './error-handler';
export * from './auth';
