// HTTP: the fastify apps ctrl (and later krane) serve.
//
// - ctrl-app.ts builds the skeleton every ctrl route group plugs into: pino request logging,
//   the one error handler (errors.ts codes → status + `{ error: { code, message, details } }`),
//   /livez, /readyz (database reachable, migrations applied, plus checks other parts register),
//   and /metrics from a per-process prom-client registry.
// - Route groups are plain functions `(app) => void` registered as encapsulated plugins; auth is
//   a preHandler hook inside each group, so /livez and /metrics stay unauthenticated.
export * from './ctrl-app';
export * from './health';
export * from './metrics';
export * from './error-handler';
export * from './auth';
