// `npm run bench:chaos [-- --seed S --schedules N --duration 20s --ha]`: seeded random faults
// (process kills, PostgreSQL restarts and terminated sessions, cut, delayed and black-holed
// connections, Kubernetes API errors; with --ha the database is a Patroni cluster and its primary
// is also killed or switched over) under a workload, then the invariants of DESIGN §10 after healing.
// Prints progress on stderr and one JSON object last on stdout; exits 1 on any violation.
// Schedule i of a run with seed S has seed S+i (in the report), so `--seed S+i --schedules 1`
// replays it alone.
import { parseArgs } from 'node:util';
import { parseDuration } from '../src/config';
import { runChaos } from './chaos/main';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    schedules: { type: 'string', default: '100' },
    duration: { type: 'string', default: '20s' },
    // The database as a Patroni cluster, with pg-failover and pg-switchover faults (docs/ha.md).
    ha: { type: 'boolean', default: false },
  },
});
const seed = Number(values.seed);
const schedules = Number(values.schedules);
const durationMs = parseDuration(values.duration!);
if (!Number.isInteger(seed) || !Number.isInteger(schedules) || schedules < 1 || !durationMs) {
  console.error('usage: bench:chaos [--seed N] [--schedules N (≥1)] [--duration 20s] [--ha]');
  process.exit(2);
}
const report = await runChaos({ seed, schedules, durationMs, ha: values.ha, log: (l) => console.error(l) });
console.log(JSON.stringify(report));
process.exit(report.violations.length ? 1 : 0);
