// `npm run bench:feed`: the change feed end to end, on a private embedded PostgreSQL, with ctrl
// in this process and the krane watchers in a child process (bench/_feed-agents.ts).
//
// - propagation: commit of a topology change → the agent's controller.apply, wall clock,
//   p50/p99 over every (change, agent) pair, with 1, 100 and 1,000 agents all watching the
//   same region (the worst case: every change fans out to every agent).
// - fullSync: from a watcher's start to its first complete snapshot (GC called) for a region
//   of 10k and 100k deployments.
// - idle: statements per second ctrl sends to PostgreSQL with 1, 100 and 1,000 agents
//   connected and nothing changing (counted at the client, and xact_commit in
//   pg_stat_database), agents re-polling every 10 s.
// - `--agents 10000` runs only that many agents (no full sync); `--replicas 2` serves them from
//   two ctrl feeds on one database behind a round-robin TCP balancer (as a load balancer in
//   front of ctrl replicas would), and kills one replica halfway through the changes: its agents
//   reconnect through the balancer to the other and must miss nothing (catch-up reported).
// Prints progress on stderr and one JSON object on the last line of stdout.
import { fork, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import postgres from 'postgres';
import { AgentAuth, buildCtrlApp } from '../src/http';
import { clusterFeedRoutes } from '../src/http/cluster-feed';
import { createLogger } from '../src/log';
import { createDb, migrate, type Sql } from '../src/store';
import { upsertTopology } from '../src/store/topology';
import { createFeed } from '../src/sync/feed';
import { startPostgres } from '../tests/helpers/postgres';
import { balancer } from '../tests/helpers/balancer';

const logger = createLogger('silent');
const say = (msg: string) => process.stderr.write(`[bench:feed] ${msg}\n`);
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TOKENS = { bench: 'bench-token-0000000000', 'bulk-10k': 'bench-token-10k-000000', 'bulk-100k': 'bench-token-100k-00000' };
const CHANGES = 40;
const CHANGE_GAP_MS = Number(process.env.BENCH_FEED_GAP_MS ?? 100);
const args = parseArgs({ options: { agents: { type: 'string' }, replicas: { type: 'string', default: '1' } } }).values;
// --agents 10000 (or BENCH_FEED_AGENTS=1000) runs only that phase and skips full sync.
const ONLY_AGENTS = args.agents ?? process.env.BENCH_FEED_AGENTS;
const AGENT_COUNTS = ONLY_AGENTS ? ONLY_AGENTS.split(',').map(Number) : [1, 100, 1000];
const REPLICAS = Number(args.replicas);
if (!(REPLICAS >= 1 && REPLICAS <= 8)) throw new Error(`--replicas must be 1 to 8 (got ${args.replicas})`);
const IDLE_WINDOW_MS = 10_000;

const pg = await startPostgres();
const url = pg.urlFor('postgres');
const admin = createDb(url, { max: 4 });
await migrate(admin);

let statements = 0;

/** One ctrl's feed side: its own pool, tailer, agent auth and HTTP server on the shared database. */
async function startReplica() {
  const sql = postgres(url, {
    max: 10,
    onnotice: () => {},
    transform: { column: { from: postgres.toCamel } },
    debug: () => {
      statements++;
    },
  }) as unknown as Sql;
  // Every simulated agent shares its region's token, so the per-token stream limit is lifted.
  const feed = createFeed({ sql, logger, waitLimitMs: 30_000, maxStreamsPerToken: Number.MAX_SAFE_INTEGER });
  await feed.start();
  const auth = new AgentAuth({ sql, logger, configured: TOKENS });
  await auth.start();
  const { app } = await buildCtrlApp({ sql, logger, routes: [clusterFeedRoutes({ sql, feed, auth })] });
  await app.listen({ host: '127.0.0.1', port: 0 });
  let alive = true;
  return {
    port: (app.server.address() as AddressInfo).port,
    get alive() {
      return alive;
    },
    /** As a crashed process: every open stream cut at once, nothing ended politely. */
    async kill() {
      alive = false;
      app.server.closeAllConnections();
      await app.close();
      await feed.close();
      await auth.close();
      await sql.end({ timeout: 1 });
    },
  };
}
type Replica = Awaited<ReturnType<typeof startReplica>>;

const replicas: Replica[] = [];
for (let i = 0; i < REPLICAS; i++) replicas.push(await startReplica());
const lb = REPLICAS > 1 ? await balancer(() => replicas.filter((r) => r.alive).map((r) => r.port)) : null;
const ctrlUrl = lb?.url ?? `http://127.0.0.1:${replicas[0]!.port}`;

async function seedDeployments(prefix: string, n: number, region?: string) {
  await admin`
    INSERT INTO deployments (id, workspace_id, project_id, app_id, environment_id, image, cpu_millicores, memory_mib, replicas, port, regions)
    SELECT ${prefix} || g, 'default', 'default', 'default', 'default', 'img:' || g, 100, 128, 1, 8080, ARRAY['bench']
    FROM generate_series(0, ${n - 1}) g`;
  if (region) {
    await admin`INSERT INTO deployment_topology (deployment_id, region, workspace_id, replicas)
                SELECT ${prefix} || g, ${region}, 'default', 1 FROM generate_series(0, ${n - 1}) g`;
  }
}

interface Agents {
  child: ChildProcess;
  ready: { snapshotMs: number; failures: number };
  request<T>(type: string, reply: string): Promise<T>;
  stop(): Promise<void>;
}

async function startAgents(region: keyof typeof TOKENS, agents: number, waitSeconds = 10): Promise<Agents> {
  const child = fork(join(import.meta.dirname, '_feed-agents.ts'), [JSON.stringify({ url: ctrlUrl, token: TOKENS[region], region, agents, waitSeconds })], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = (type: string) =>
    new Promise<any>((resolve, reject) => {
      const on = (m: any) => {
        if (m.type === type) {
          child.off('message', on);
          resolve(m);
        }
      };
      child.on('message', on);
      child.once('exit', (c) => reject(new Error(`agents exited with ${c}`)));
    });
  const ready = await next('ready');
  return {
    child,
    ready,
    async request(type, reply) {
      const p = next(reply);
      child.send({ type });
      return p;
    },
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'stop' });
      await Promise.race([exited, sleep(5_000)]);
      child.kill();
    },
  };
}

async function xact(): Promise<number> {
  const [r] = await admin<{ n: string }[]>`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`;
  return Number(r!.n);
}

async function idleLoad() {
  const s0 = statements;
  const x0 = await xact();
  const t0 = Date.now();
  await sleep(IDLE_WINDOW_MS);
  const secs = (Date.now() - t0) / 1000;
  // The two pg_stat_database reads are this bench's own transactions, not ctrl's.
  return { statementsPerSec: round((statements - s0) / secs), xactCommitPerSec: round(((await xact()) - x0 - 1) / secs) };
}

const round = (x: number) => Math.round(x * 10) / 10;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
};

const result: Record<string, unknown> = { bench: 'feed', changes: CHANGES, changeGapMs: CHANGE_GAP_MS };
const propagation: Record<string, unknown> = {};
const idle: Record<string, unknown> = {};
let depSeq = 0;
await seedDeployments('dep-b', 3 * CHANGES);

for (const n of AGENT_COUNTS) {
  say(`starting ${n} agents`);
  const agents = await startAgents('bench', n);
  await sleep(1_000);
  say(`idle window with ${n} agents`);
  idle[`agents${n}`] = await idleLoad();
  await agents.request('record', 'recording');
  const commits = new Map<string, number>();
  const ctrlCpu0 = process.cpuUsage();
  let killedAt: number | null = null;
  const afterKill = new Set<string>();
  for (let i = 0; i < CHANGES; i++) {
    if (REPLICAS > 1 && i === CHANGES / 2) {
      say(`killing replica 0 of ${REPLICAS}`);
      killedAt = now();
      await replicas[0]!.kill();
    }
    const id = `dep-b${depSeq++}`;
    if (killedAt !== null) afterKill.add(id);
    await upsertTopology(admin, { deploymentId: id, region: 'bench', workspaceId: 'default', replicas: 1 });
    commits.set(id, now());
    await sleep(CHANGE_GAP_MS);
  }
  await sleep(1_500);
  const ctrlCpu = process.cpuUsage(ctrlCpu0);
  const report = await agents.request<{ seen: Record<string, number[]>; failures: number; deferred: number; cpuMs: number }>('report', 'report');
  const lat: number[] = [];
  const latAfterKill: number[] = [];
  let missing = 0;
  for (const [id, t] of commits) {
    const got = report.seen[id] ?? [];
    missing += n - got.length;
    for (const at of got) (afterKill.has(id) ? latAfterKill : lat).push(at - t);
  }
  // With a replica killed: the changes after the kill, measured from their commit, include the
  // reconnect of the killed replica's agents; the worst of them is the catch-up.
  if (killedAt !== null) result.replicaKill = { replicas: REPLICAS, changesAfterKill: afterKill.size, p50Ms: pct(latAfterKill, 50), p99Ms: pct(latAfterKill, 99), catchUpMs: pct(latAfterKill, 100) };
  lat.push(...latAfterKill);
  propagation[`agents${n}`] = { p50Ms: pct(lat, 50), p99Ms: pct(lat, 99), maxMs: pct(lat, 100), samples: lat.length, missing, streamFailures: report.failures, deferredPolls: report.deferred,
    // CPU spent per change during the run: ctrl (this process, writer included) and all agents.
    ctrlCpuMsPerChange: round((ctrlCpu.user + ctrlCpu.system) / 1000 / CHANGES), agentsCpuMsPerChange: round(report.cpuMs / CHANGES) };
  say(`propagation with ${n} agents: ${JSON.stringify(propagation[`agents${n}`])}`);
  await agents.stop();
}

const fullSync: Record<string, unknown> = {};
for (const [region, n] of ONLY_AGENTS ? [] : ([['bulk-10k', 10_000], ['bulk-100k', 100_000]] as const)) {
  say(`seeding ${n} resources`);
  await seedDeployments(`dep-${region}-`, n, region);
  await admin`ANALYZE`;
  const agents = await startAgents(region, 1);
  fullSync[`resources${n / 1000}k`] = { ms: round(agents.ready.snapshotMs), failures: agents.ready.failures };
  say(`full sync of ${n}: ${agents.ready.snapshotMs.toFixed(0)} ms`);
  await agents.stop();
}

result.propagation = propagation;
// ctrl runs in this process (the agents in a child): its peak memory is this process's.
result.ctrlPeakRssMib = Math.round(process.resourceUsage().maxRSS / 1024);
result.fullSync = fullSync;
result.idle = idle;
result.targets = { p99At100AgentsMs: 50, p99At1000AgentsMs: 100, p99At10000AgentsMs: 250, fullSync100kMs: 5000, idleStatementsPerSec: 100, ctrlRssAt10000AgentsMib: 1536 };
result.met = {
  p99At100: (propagation.agents100 as any)?.p99Ms <= 50,
  p99At1000: (propagation.agents1000 as any)?.p99Ms <= 100,
  ...(propagation.agents10000 ? { p99At10000: (propagation.agents10000 as any).p99Ms <= 250, missingAt10000: (propagation.agents10000 as any).missing === 0 } : {}),
  fullSync100k: (fullSync.resources100k as any)?.ms <= 5000,
  idle: Object.values(idle).every((v: any) => v.statementsPerSec <= 100),
};

lb?.close();
for (const r of replicas) if (r.alive) await r.kill();
await admin.end({ timeout: 1 });
await pg.stop();
console.log(JSON.stringify(result));
