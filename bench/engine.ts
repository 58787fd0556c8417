// `npm run bench:engine [-- --compare restate[,dbos] [--quick]]`: the durable execution engine, on an
// embedded PostgreSQL of its own. The shapes (_engine-shapes.ts) are issue 3's Restate / DBOS
// measurements: a 10-step invocation (p50/p99, and per step), awakeable resolve -> handler
// resumed (from HTTP and from another invocation), 10-step invocations a second from 50
// concurrent callers on distinct keys and on one key.
//
// Alone it runs twice: on the test harness's PostgreSQL (fsync off: the headline) and on one
// with default durability (fsync on). With --compare it runs on the durable PostgreSQL only,
// beside each named peer in the same run, the subjects taking turns within each shape, and
// prints the ratios (above 1: this engine is better). The peers are installed on first use
// into a cache outside the project (_peer-install.ts). A ratio from another day or machine is
// not evidence; these are measured side by side.
// Each subject also reports the longest wait for the next completion and the longest call in
// its throughput windows (`longestGapMs`, `longestCallMs`), and this engine its leases lost
// (`leasesLost`): a key held idle until its lease lapsed showed only as a low one-key rate before.
// Prints one JSON object on the last stdout line.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { startPostgres, type PgServer } from '../tests/helpers/postgres';
import { measure, pct, ratios, type Probe, type ShapeOptions, type ShapeResult, type Subject } from './_engine-shapes';
import { startOurs } from './_engine-ours';

/** The concurrency the comparison numbers were measured at. */
const CONCURRENCY = 50;
/** Alone: enough calls for JIT and the pool to settle; 300 samples make p99 the 3rd worst;
 *  200 awakeable samples keep that phase short; 4 s of throughput amortise the ramp-up. */
const ALONE: ShapeOptions = { warmup: 50, latencyRuns: 300, awakeableRuns: 200, throughputMs: 4_000, concurrency: CONCURRENCY, rounds: 1 };
/** Side by side: the same totals in three rounds per subject, so both meet the same load.
 *  --quick: a smoke run of every shape (seconds, not a measurement). */
const QUICK = process.argv.includes('--quick');
const SIDE_BY_SIDE: ShapeOptions = QUICK
  ? { warmup: 3, latencyRuns: 9, awakeableRuns: 3, throughputMs: 1_500, concurrency: CONCURRENCY, rounds: 3 }
  : { ...ALONE, rounds: 3, throughputMs: 6_000 };

function argList(name: string): string[] {
  const out: string[] = [];
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === name && argv[i + 1]) out.push(...argv[++i]!.split(','));
    else if (argv[i]!.startsWith(`${name}=`)) out.push(...argv[i]!.slice(name.length + 1).split(','));
  }
  return out.filter(Boolean);
}

/** A one-row commit on a connection of its own: what one step is compared with. */
async function commitProbe(server: PgServer, db: string): Promise<Probe & { end(): Promise<void> }> {
  const sql = postgres(server.urlFor(db), { max: 1, onnotice: () => {} });
  await sql`CREATE TABLE IF NOT EXISTS bench_commit (id serial PRIMARY KEY, at timestamptz DEFAULT now())`;
  return { run: () => sql`INSERT INTO bench_commit DEFAULT VALUES`, samples: [], end: () => sql.end() };
}

async function commitP50(server: PgServer, db: string): Promise<number> {
  const probe = await commitProbe(server, db);
  for (let i = 0; i < 300; i++) {
    const t0 = performance.now();
    await probe.run();
    probe.samples.push(performance.now() - t0);
  }
  await probe.end();
  return pct(probe.samples, 50);
}

/** This engine alone on one PostgreSQL; statements per invocation from the pool's count. */
async function alone(server: PgServer): Promise<ShapeResult & { statementsPerInvocation: number; leasesLost: number }> {
  const ours = await startOurs(server, 'bench_engine', CONCURRENCY);
  const before = ours.statements();
  // The statements of a fixed number of concurrent invocations: a count, not a timing.
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => (async () => { for (let i = 0; i < 20; i++) await ours.keyedTen(`count-${w}`); })()));
  const statementsPerInvocation = Number(((ours.statements() - before) / (CONCURRENCY * 20)).toFixed(2));
  const r = (await measure([ours], ALONE)).get('ours')!;
  const leasesLost = await ours.leasesLost();
  await ours.stop();
  return { ...r, statementsPerInvocation, leasesLost };
}

const machine = () => ({ cpus: cpus().length, loadAverage1m: Number(loadavg()[0]!.toFixed(2)), date: new Date().toISOString().slice(0, 10) });

const compare = argList('--compare');
const known = new Set(['restate', 'dbos']);
const unknown = compare.filter((c) => !known.has(c));
if (unknown.length) {
  console.error(`bench:engine: --compare takes restate and/or dbos, not ${unknown.join(', ')}`);
  process.exit(2);
}

if (compare.length === 0) {
  const fast = await startPostgres();
  const headline = await alone(fast);
  const fastCommit = await commitP50(fast, 'bench_engine');
  await fast.stop();
  const slow = await startPostgres({ durable: true });
  const durable = await alone(slow);
  const durableCommit = await commitP50(slow, 'bench_engine');
  await slow.stop();
  console.log(
    JSON.stringify({
      bench: 'engine',
      ...headline,
      postgres: 'embedded via tests/helpers/postgres.ts (fsync off, synchronous_commit off)',
      oneRowCommitP50Ms: fastCommit,
      durablePostgres: { postgres: 'embedded, default durability (fsync on)', oneRowCommitP50Ms: durableCommit, ...durable },
      machine: machine(),
      targets: { tenStepP50Ms: 12, awakeableP50Ms: 3, awakeableP99Ms: 10, distinctKeysPerSec: 300 },
    }),
  );
} else {
  const server = await startPostgres({ durable: true });
  const load0 = loadavg()[0]!;
  const subjects: Subject[] = [];
  const versions: Record<string, string> = {};
  const ours = await startOurs(server, 'bench_engine', CONCURRENCY);
  subjects.push(ours);
  if (compare.includes('restate')) {
    const { startRestate } = await import('./_peer-restate');
    const r = await startRestate();
    versions.restate = r.version;
    subjects.push(r);
  }
  if (compare.includes('dbos')) {
    const { startDbos } = await import('./_peer-dbos');
    const d = await startDbos(server, 'bench_dbos', CONCURRENCY);
    versions.dbos = d.version;
    subjects.push(d);
  }
  // The commit is timed in the same rounds as the 10-step and 0-step calls (see Probe).
  const probe = await commitProbe(server, 'bench_engine');
  const results = await measure(subjects, SIDE_BY_SIDE, probe);
  await probe.end();
  const commit = pct(probe.samples, 50);
  const leasesLost = await ours.leasesLost();
  for (const s of subjects) await s.stop();
  await server.stop();
  const o = results.get('ours')!;
  const peers = Object.fromEntries(subjects.filter((s) => s.name !== 'ours').map((s) => [s.name, { version: versions[s.name], ...results.get(s.name)! }]));
  const ratioOf = Object.fromEntries(Object.keys(peers).map((n) => [n, ratios(o, results.get(n)!)]));
  console.log(
    JSON.stringify({
      bench: 'engine',
      mode: 'side by side',
      postgres: 'embedded, default durability (fsync on); Restate with its defaults (WAL fsync on)',
      oneRowCommitP50Ms: commit,
      ours: { ...o, perStepOverCommit: Number((o.perStepMs / commit).toFixed(2)), leasesLost },
      ...peers,
      ratios: ratioOf,
      machine: { ...machine(), loadAverage1mAtStart: Number(load0.toFixed(2)) },
      targets: { restate: { distinctKeysPerSec: 2.5, tenStepP50: 3 }, perStepOverCommit: 1.5 },
    }),
  );
}
process.exit(0);
