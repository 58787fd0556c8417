// The failover benchmark (`npm run bench:failover`, issue 35): ctrl on a Patroni cluster
// (scripts/ha) through PgBouncer, a planned switchover and then a SIGKILL of the primary under a
// stream of deploys, canaries and a sentinel rollout, and what that cost.
//
// What it owns:
// - run.ts: one run: the cluster, the stack (ctrl and two regions in this process), the
//   workload lanes (every create through the CLI's client, retried with an Idempotency-Key),
//   the two faults, and the report (writes lost, time to the first accepted write, time to
//   every region converged, changes missed, workflows failed, steps written twice, duplicates).
// - observe.ts: the watches: when the deployments accepted before a fault are final and run in
//   every region as the database says (the chaos harness's readers of desired and actual
//   state), and settling at the end.
//
// It reads the system only through the public API, SQL and the simulator's admin API, as the
// chaos harness does; the cluster is the one scripts/ha-up.sh brings up for a user.
export { runFailover, type FailoverOptions, type FailoverReport } from './run';
