// The chaos cluster: one PostgreSQL (or, with --ha, a Patroni cluster), two ctrl replicas (each
// reaching PostgreSQL through its own fault proxy), and per region a kube-sim and a krane (krane reaching ctrl through a fault
// proxy that balances over both replicas, as a load balancer in front of ctrl would).
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { LOG_LEVELS } from '../../src/log';
import { freePort } from '../../src/net';
import { FaultProxy } from './proxy';
import { killChild, startChild, startPostgres, waitHttp, type Child, type Postgres } from './processes';
import { startHaDatabase } from './ha-database';

/** Diagnosis knobs (README, Benchmarks): checked once here, not by every child failing its config. */
export const KEEP_DB = process.env.CHAOS_KEEP_DB === '1';
const CHILD_LOG_LEVEL = process.env.CHAOS_LOG_LEVEL ?? 'info';
if (!(LOG_LEVELS as readonly string[]).includes(CHILD_LOG_LEVEL)) throw new Error(`CHAOS_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);

/** Two of each: the fewest that show cross-region and cross-replica faults. */
export const REGIONS = ['us-east-1', 'eu-west-1'];
export const CTRL_REPLICAS = 2;
/** A killed replica's workflows resume elsewhere after this lease; short so healing is quick. */
const ENGINE_LEASE = '5s';
/** Pods of the simulator become Ready after this many ms: fast, yet not instant, like a real pull. */
const READY_DELAY_MS = 50;
/** Generous: on a busy 2-core machine a cold node start of the bundle takes seconds. */
const START_TIMEOUT_MS = 60_000;

export interface CtrlNode {
  child: Child;
  url: string;
  pgProxy: FaultProxy;
}

export interface RegionNode {
  name: string;
  token: string;
  simUrl: string;
  sim: Child;
  krane: Child;
  kraneProxy: FaultProxy;
}

export interface ChaosCluster {
  dir: string;
  pg: Postgres;
  /** The harness's own connection: straight to PostgreSQL, never through a proxy. */
  sql: postgres.Sql;
  databaseUrl: string;
  adminToken: string;
  ctrls: CtrlNode[];
  regions: RegionNode[];
  bundle: string;
  /** Stops everything; the logs stay when `keepLogs` (a schedule with violations). */
  close(keepLogs?: boolean): Promise<void>;
}

/** The PostgreSQL server all schedules share (each schedule gets a database of its own): an
 *  embedded one, or with `ha` a Patroni cluster (ha-database.ts). */
export async function startServer(dir: string, ha = false): Promise<Postgres> {
  return ha ? startHaDatabase(join(dir, 'pg')) : startPostgres(join(dir, 'pg'), await freePort());
}

export function runDir(): string {
  const dir = join(tmpdir(), `unkey-chaos-${process.pid}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * A fresh cluster for one schedule: a new database on the shared server, new processes and new
 * simulators, so one schedule's leftovers never count against the next and a seed replays alone.
 */
export async function startCluster(bundle: string, pg: Postgres, runDirPath: string, name: string): Promise<ChaosCluster> {
  const dir = join(runDirPath, name);
  const logDir = join(dir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const admin = postgres(pg.urlFor('postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  await admin.end();
  const databaseUrl = pg.urlFor(name);
  const sql = postgres(databaseUrl, { max: 4, onnotice: () => {}, connection: { application_name: 'chaos-harness' } });
  const adminToken = randomBytes(24).toString('base64url');
  const tokens = REGIONS.map(() => `uka_${randomBytes(24).toString('base64url')}`);
  const agentTokens = REGIONS.map((r, i) => `${r}=${tokens[i]}`).join(',');

  const ctrls: CtrlNode[] = [];
  const regions: RegionNode[] = [];
  const cluster: ChaosCluster = {
    dir,
    pg,
    sql,
    databaseUrl,
    adminToken,
    ctrls,
    regions,
    bundle,
    async close(keepLogs = false) {
      for (const r of regions) await killChild(r.krane);
      for (const c of ctrls) await killChild(c.child);
      for (const r of regions) await killChild(r.sim);
      for (const p of [...ctrls.map((c) => c.pgProxy), ...regions.map((r) => r.kraneProxy)]) await p.close();
      await sql.end({ timeout: 2 }).catch(() => {});
      const admin = postgres(pg.urlFor('postgres'), { max: 1, onnotice: () => {} });
      // CHAOS_KEEP_DB=1 keeps a failed schedule's database (and the server's data directory) to read.
      if (!(keepLogs && KEEP_DB)) await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {});
      await admin.end();
      if (!keepLogs) rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    // Replicas start one after the other, so they never race on migrations; restarts skip them.
    for (let i = 0; i < CTRL_REPLICAS; i++) {
      // On a Patroni cluster the pool goes through PgBouncer and LISTEN and full syncs go
      // beside it (to the primary and the standby through HAProxy), as docs/ha.md says to run it.
      const pgProxy = new FaultProxy([{ host: '127.0.0.1', port: pg.ha ? pg.ha.poolerPort : pg.port }]);
      const proxyPort = await pgProxy.listen();
      const port = await freePort();
      const args = [
        'ctrl',
        `--database-url=postgres://${pg.ha?.userinfo ?? 'postgres:postgres'}@127.0.0.1:${proxyPort}/${name}`,
        ...(pg.ha ? [`--database-direct-url=${pg.ha.directUrlFor(name)}`, `--database-read-url=${pg.ha.readUrlFor(name)}`] : []),
        `--listen=127.0.0.1:${port}`,
        `--admin-token=${adminToken}`,
        `--agent-tokens=${agentTokens}`,
        `--engine-lease=${ENGINE_LEASE}`,
        '--deploy-timeout=3m',
        '--sentinel-timeout=3m',
        // The progressive lane's stand-in Prometheus listens on 127.0.0.1 over plain http.
        '--outbound-allow=127.0.0.1',
        `--log-level=${CHILD_LOG_LEVEL}`,
      ];
      const node: CtrlNode = { child: { name: `ctrl-${i}`, args, starts: 0 }, url: `http://127.0.0.1:${port}`, pgProxy };
      ctrls.push(node);
      startChild(node.child, bundle, logDir);
      await waitHttp(`${node.url}/readyz`, START_TIMEOUT_MS);
      node.child.args.push('--no-migrate');
    }
    for (const [i, region] of REGIONS.entries()) regions.push(await startRegion(bundle, dir, region, tokens[i]!, ctrls));
  } catch (err) {
    // Nothing half-started is left running; the logs stay for the diagnosis.
    await cluster.close(true);
    throw err;
  }
  return cluster;
}

/** A region: its simulator, then its krane behind a proxy that balances over the ctrl replicas. */
async function startRegion(bundle: string, dir: string, region: string, token: string, ctrls: CtrlNode[]): Promise<RegionNode> {
  const logDir = join(dir, 'logs');
  const simPort = await freePort();
  const kubeconfig = join(dir, `${region}.kubeconfig`);
  const sim: Child = { name: `sim-${region}`, args: ['kube-sim', `--port=${simPort}`, `--ready-delay=${READY_DELAY_MS}`, `--kubeconfig-out=${kubeconfig}`, '--log-level=warn'], starts: 0 };
  startChild(sim, bundle, logDir);
  const simUrl = `http://127.0.0.1:${simPort}`;
  await waitHttp(`${simUrl}/_sim/info`, START_TIMEOUT_MS);
  const kraneProxy = new FaultProxy(ctrls.map((c) => ({ host: '127.0.0.1', port: Number(new URL(c.url).port) })));
  await kraneProxy.listen();
  const kranePort = await freePort();
  const krane: Child = {
    name: `krane-${region}`,
    args: ['krane', `--region=${region}`, `--control-plane=${kraneProxy.url}`, `--token=${token}`, `--kubeconfig=${kubeconfig}`, `--listen=127.0.0.1:${kranePort}`, `--log-level=${CHILD_LOG_LEVEL}`],
    starts: 0,
  };
  startChild(krane, bundle, logDir);
  try {
    await waitHttp(`http://127.0.0.1:${kranePort}/livez`, START_TIMEOUT_MS);
  } catch (err) {
    for (const c of [krane, sim]) await killChild(c);
    await kraneProxy.close();
    throw err;
  }
  return { name: region, token, simUrl, sim, krane, kraneProxy };
}
