// The chaos harness (`npm run bench:chaos`, DESIGN §10; issue 10): seeded random faults against
// real processes under a workload, then the invariants.
//
// What it owns:
// - schedule.ts: pure, seed in, schedule out (mulberry32). At most one fault per target at a
//   time, at most one ctrl replica out at a time, every fault starting in the first 70% of the
//   schedule. Schedule i of a run with seed S has seed S+i and replays alone.
// - proxy.ts (FaultProxy): TCP proxy on node:net, modes pass / delay / cut / cut mid-chunk /
//   black hole, over one or more upstreams (a refused upstream is skipped).
// - processes.ts + cluster.ts: one embedded PostgreSQL for the whole run (fast-restartable),
//   and per schedule a fresh database and fresh processes of the built bundle
//   (dist/unkey-infra.mjs): two `ctrl` replicas, each reaching PostgreSQL through its own
//   proxy; per region a `kube-sim` and a `krane` reaching ctrl through a proxy that balances
//   over both replicas. Logs per process in the run directory, kept when a schedule fails.
// - faults.ts: carries the faults out (SIGKILL and restart, PostgreSQL fast restart,
//   pg_terminate_backend of ctrl's sessions, proxy modes, the simulator's /_sim/chaos) and
//   heals everything.
// - ha-database.ts (`--ha`, issue 35): the database as a Patroni cluster (scripts/ha), ctrl
//   through PgBouncer with LISTEN and full syncs beside it; its faults pg-failover (the
//   primary's node killed, the standby promoted, the old one rejoining) and pg-switchover, drawn
//   only in that mode so a seed of the plain run keeps its schedule.
// - workload.ts: deploys (every third autoscaled, a busy or an idle image), stops/starts,
//   rollbacks, sentinel deploys and fleet rollouts through the public API, alternating
//   replicas; every call recorded. Healthy images only, so any failure is the system's.
// - observe.ts: desired-state samples (SQL reads), deployment status events (LISTEN), each
//   region's objects and deletion audit (the simulator's HTTP API).
// - invariants.ts: pure checks (cluster vs desired, autoscaled replicas within bounds, routes
//   addressing the ready pods, wrong deletions, steps twice, the traffic rules of
//   tests/model/traffic-rules.ts, which the lifecycle model judges with too).
// - run.ts: one schedule; main.ts: N schedules and the report.
//
// Concurrency: one schedule at a time (the machine is shared); inside a schedule the workload,
// the faults and the samplers run concurrently on the event loop.
//
// Imports: only the kernel (src/net.ts, src/config.ts's duration parser), packages and the
// tests' pure rules and stand-ins (tests/model/traffic-rules.ts, the Prometheus stand-in). Never
// ctrl's, krane's or the engine's code: the harness sees the system as an operator does,
// through the CLI bundle, the public HTTP API, SQL reads and the simulator's admin API, so it
// stays valid while those parts change underneath.
export { runChaos, aggregate, type ChaosOptions, type ChaosReport } from './main';
export { generateSchedule, countByKind, prng, scheduleSeed, FAULT_KINDS, BASE_FAULT_KINDS, HA_FAULT_KINDS, type Fault, type FaultKind } from './schedule';
export { FaultProxy } from './proxy';
