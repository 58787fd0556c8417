// A highly available PostgreSQL on one machine, from Debian's packages: etcd, a Patroni node
// per PostgreSQL (a primary and streaming standbys), HAProxy routing by Patroni's REST API
// (/primary, /replica) and PgBouncer in transaction mode in front of the primary port. Used by
// scripts/ha-up.sh (to try ctrl against it), tests/ha and bench:failover / bench:chaos.
//
// Every process runs as the `postgres` user when we are root (PostgreSQL refuses root, and the
// others need no more), on free loopback ports, in one temporary directory with a log file per
// process. stop() ends them all (Patroni first, then whatever it left) and is safe to call
// twice; a process exit of ours kills what is left, so a failed test leaves nothing running.
// Waits are on conditions Patroni reports (who leads, who streams, who is synchronous), each
// with a generous deadline that only catches a cluster that never gets there.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../src/net';
import postgres from 'postgres';
import { etcdArgs, FAST_TIMING, haproxyConfig, patroniConfig, pgbouncerConfig, pgbouncerUserlist, type Credentials, type Ports, type Timing } from './config';
import { chownTree, killPid, Proc, runAs, waitFor } from './processes';

export interface HaClusterOptions {
  /** PostgreSQL nodes (each under Patroni); the first one becomes the first primary. */
  nodes?: number;
  /** Patroni's synchronous_mode: a commit waits for the synchronous standby. */
  synchronous?: boolean;
  /** The database ctrl uses (created on the first primary). */
  database?: string;
  /** Keep fsync on (benchmarks that want real commit costs, people trying it). */
  durable?: boolean;
  timing?: Timing;
  /** The port node `index` advertises for replication (a test's proxy); default its own. */
  advertise?: (index: number, pgPort: number) => Promise<number> | number;
  /** Bytes of WAL a standby may lack and still be promoted (tests that lose WAL on purpose). */
  maximumLagOnFailover?: number;
  /** Extra PostgreSQL parameters for every node. */
  parameters?: Record<string, string | number>;
  /** Where files and logs go; default a new temporary directory, removed by stop(). */
  dir?: string;
  /** Keep the directory on stop (logs of a failed run). */
  keepDir?: boolean;
  /** Deadline for each wait (ms): a safety net, generous for a loaded 2-core machine. */
  waitMs?: number;
}

export interface MemberView {
  name: string;
  role: string;
  state: string;
  timeline?: number;
  lag?: number | string;
}

export interface HaNode {
  name: string;
  index: number;
  pgPort: number;
  restPort: number;
  dir: string;
  /** Direct URL of this node's PostgreSQL. */
  url(database?: string): string;
}

export interface HaCluster {
  dir: string;
  scope: string;
  database: string;
  synchronous: boolean;
  nodes: HaNode[];
  credentials: Credentials;
  /** Through HAProxy's primary port: a session always on the current primary. */
  primaryUrl: string;
  /** Through HAProxy's replica port: a streaming standby. */
  replicaUrl: string;
  /** Through PgBouncer (transaction mode) to the primary: ctrl's --database-url beside a
   *  --database-direct-url (which makes ctrl talk to it as to a pooler: src/store/db.ts). */
  poolerUrl: string;
  /** Every node, `target_session_attrs=read-write`: what a client without HAProxy uses. */
  multiHostUrl: string;
  members(): Promise<MemberView[]>;
  /** The current leader's name, as any reachable node's REST API says. */
  leader(): Promise<string | undefined>;
  /** Waits until a leader other than `not` runs as primary; returns its name. */
  waitLeader(not?: string): Promise<string>;
  /** Waits until `name` streams from the leader (as sync standby in synchronous mode). */
  waitStandby(name: string): Promise<void>;
  /** A planned switchover to `candidate` (default: any standby); returns the new leader. */
  switchover(candidate?: string): Promise<string>;
  /** SIGKILL of a node's Patroni and PostgreSQL: a machine lost, as far as the cluster sees. */
  kill(name: string): Promise<void>;
  /** Starts a killed node's Patroni again; it rejoins as a standby (pg_rewind). */
  start(name: string): Promise<void>;
  isRunning(name: string): boolean;
  stop(): Promise<void>;
}

const PG_BIN_CANDIDATES = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'];
const DEFAULT_WAIT_MS = 120_000;

/** Debian's newest installed PostgreSQL server binaries (the `postgresql` package). */
export function postgresBinDir(): string {
  const dir = PG_BIN_CANDIDATES.find((d) => existsSync(join(d, 'postgres')));
  if (!dir) throw new Error(`no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql); looked in ${PG_BIN_CANDIDATES.join(', ')}`);
  return dir;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const r = await fetch(url, { signal: AbortSignal.timeout(3_000) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

// Over 80 lines: the cluster's processes in start order and the handle's operations, which
// share them; each operation is short.
export async function startHaCluster(o: HaClusterOptions = {}): Promise<HaCluster> {
  const nodeCount = o.nodes ?? 2;
  const database = o.database ?? 'unkey';
  const waitMs = o.waitMs ?? DEFAULT_WAIT_MS;
  const who = runAs();
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'unkey-ha-'));
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const binDir = postgresBinDir();
  const pw = () => randomBytes(12).toString('hex');
  const credentials: Credentials = {
    superuser: { username: 'postgres', password: pw() },
    replication: { username: 'replicator', password: pw() },
    rewind: { username: 'rewinder', password: pw() },
  };
  const nodePorts = [];
  for (let i = 0; i < nodeCount; i++) {
    const pg = await freePort();
    nodePorts.push({ pg, rest: await freePort(), advertised: o.advertise ? await o.advertise(i, pg) : pg });
  }
  const ports: Ports = {
    etcdClient: await freePort(),
    etcdPeer: await freePort(),
    nodes: nodePorts,
    haproxyPrimary: await freePort(),
    haproxyReplica: await freePort(),
    haproxyStats: await freePort(),
    pgbouncer: await freePort(),
  };
  const scope = `unkey-ha-${randomBytes(3).toString('hex')}`;
  const procs = new Map<string, Proc>();
  const add = (name: string, cmd: string, args: string[]) => {
    const p = new Proc(name, cmd, args, join(dir, 'logs'), who, dir);
    procs.set(name, p);
    p.start();
    return p;
  };
  const running = (name: string) => !!procs.get(name)?.running;

  const nodes: HaNode[] = nodePorts.map((p, i) => ({
    name: `node${i}`,
    index: i,
    pgPort: p.pg,
    restPort: p.rest,
    dir: join(dir, `node${i}`),
    url: (db = database) => `postgres://${credentials.superuser.username}:${credentials.superuser.password}@127.0.0.1:${p.pg}/${db}`,
  }));
  const postmasterPid = (n: HaNode): number | undefined => {
    try {
      const pid = Number(readFileSync(join(n.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  // A postmaster outlives a killed Patroni: whatever happens to this process, none of ours does.
  const killPostmasters = () => nodes.forEach((n) => killPid(postmasterPid(n)));
  process.once('exit', killPostmasters);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // Patroni stops its PostgreSQL on SIGTERM (fast shutdown); what is still there after the
    // grace (a hung Patroni, the orphaned postmaster of a killed one) is killed.
    await Promise.all([...procs.values()].map((p) => p.stop('SIGTERM', 20_000)));
    killPostmasters();
    process.off('exit', killPostmasters);
    if (!o.keepDir && !o.dir) rmSync(dir, { recursive: true, force: true });
  };

  const nodeNamed = (name: string) => {
    const n = nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node ${name}`);
    return n;
  };
  const rest = (n: HaNode, path: string) => getJson(`http://127.0.0.1:${n.restPort}${path}`);
  const members = async (): Promise<MemberView[]> => {
    for (const n of nodes) {
      if (!running(n.name)) continue;
      try {
        const r = await rest(n, '/cluster');
        if (r.status === 200 && Array.isArray(r.body?.members)) return r.body.members;
      } catch {
        // try the next node
      }
    }
    return [];
  };
  const leader = async () => (await members()).find((m) => m.role === 'leader' && m.state === 'running')?.name;
  // Primary means its own REST API says so (not only etcd): it accepts writes now.
  const waitLeader = (not?: string) =>
    waitFor(`a primary${not ? ` other than ${not}` : ''}`, waitMs, async () => {
      const l = await leader();
      if (!l || l === not) return undefined;
      return (await rest(nodeNamed(l), '/primary')).status === 200 ? l : undefined;
    });
  const waitStandby = async (name: string): Promise<void> => {
    await waitFor(`${name} streaming${o.synchronous ? ' as synchronous standby' : ''}`, waitMs, async () => {
      const n = nodeNamed(name);
      if ((await rest(n, '/replica')).status !== 200) return undefined;
      if (o.synchronous && (await rest(n, '/sync')).status !== 200) return undefined;
      return true;
    });
  };
  const startNode = (n: HaNode) => {
    mkdirSync(n.dir, { recursive: true, mode: 0o700 });
    const cfg = patroniConfig({
      scope, name: n.name, dir: n.dir, binDir, ports, index: n.index, credentials, synchronous: !!o.synchronous,
      timing: o.timing ?? FAST_TIMING, durable: !!o.durable, parameters: o.parameters, maximumLagOnFailover: o.maximumLagOnFailover,
    });
    writeFileSync(join(n.dir, 'patroni.yml'), JSON.stringify(cfg, null, 2), { mode: 0o600 });
    chownTree(n.dir, who);
    add(n.name, 'patroni', [join(n.dir, 'patroni.yml')]);
  };

  try {
    chownTree(dir, who);
    add('etcd', 'etcd', etcdArgs(dir, ports));
    await waitFor('etcd healthy', waitMs, async () => ((await getJson(`http://127.0.0.1:${ports.etcdClient}/health`)).body?.health === 'true' ? true : undefined));
    // node0 first, alone, so it is the first primary; the database ctrl uses is created on it
    // (standbys copy it), then the standbys join.
    startNode(nodes[0]!);
    const first = await waitLeader();
    if (first !== nodes[0]!.name) throw new Error(`expected node0 to lead first, got ${first}`);
    const admin = postgres(nodes[0]!.url('postgres'), { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`CREATE DATABASE ${database}`);
    } finally {
      await admin.end();
    }
    for (const n of nodes.slice(1)) startNode(n);
    for (const n of nodes.slice(1)) await waitStandby(n.name);

    writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfig(ports));
    add('haproxy', 'haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')]);
    writeFileSync(join(dir, 'pgbouncer.ini'), pgbouncerConfig({ dir, port: ports.pgbouncer, upstream: { host: '127.0.0.1', port: ports.haproxyPrimary }, admin: credentials.superuser.username }));
    writeFileSync(join(dir, 'userlist.txt'), pgbouncerUserlist([credentials.superuser]), { mode: 0o600 });
    chownTree(dir, who);
    add('pgbouncer', 'pgbouncer', [join(dir, 'pgbouncer.ini')]);

    const su = credentials.superuser;
    const url = (port: number, extra = '') => `postgres://${su.username}:${su.password}@127.0.0.1:${port}/${database}${extra}`;
    const cluster: HaCluster = {
      dir,
      scope,
      database,
      synchronous: !!o.synchronous,
      nodes,
      credentials,
      primaryUrl: url(ports.haproxyPrimary),
      replicaUrl: url(ports.haproxyReplica),
      poolerUrl: url(ports.pgbouncer),
      multiHostUrl: `postgres://${su.username}:${su.password}@${nodes.map((n) => `127.0.0.1:${n.pgPort}`).join(',')}/${database}?target_session_attrs=read-write`,
      members,
      leader,
      waitLeader,
      waitStandby,
      async switchover(candidate) {
        const from = await waitLeader();
        const to = candidate ?? nodes.find((n) => n.name !== from && running(n.name))?.name;
        if (!to) throw new Error('no standby to switch over to');
        await waitStandby(to);
        const r = await fetch(`http://127.0.0.1:${nodeNamed(from).restPort}/switchover`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ leader: from, candidate: to }),
          signal: AbortSignal.timeout(waitMs),
        });
        if (r.status !== 200) throw new Error(`switchover ${from} → ${to} answered ${r.status}: ${await r.text()}`);
        return waitLeader(from);
      },
      async kill(name) {
        const n = nodeNamed(name);
        const pm = postmasterPid(n);
        await procs.get(name)!.stop('SIGKILL', 0);
        killPid(pm);
        // The postmaster is gone when its pid no longer takes a signal 0.
        await waitFor(`${name}'s postmaster gone`, waitMs, async () => {
          try {
            if (pm) process.kill(pm, 0);
            return pm ? undefined : true;
          } catch {
            return true;
          }
        });
      },
      async start(name) {
        procs.get(name)!.start();
      },
      isRunning: running,
      stop,
    };
    // HAProxy and PgBouncer are up when a session through each lands on the primary.
    for (const [what, u] of [['HAProxy', cluster.primaryUrl], ['PgBouncer', cluster.poolerUrl]] as const) {
      await waitFor(`${what} reaches the primary`, waitMs, async () => {
        const s = postgres(u, { max: 1, onnotice: () => {}, connect_timeout: 3, prepare: false });
        try {
          const [r] = await s`SELECT pg_is_in_recovery() AS standby`;
          return r!.standby === false ? true : undefined;
        } finally {
          await s.end({ timeout: 1 });
        }
      });
    }
    return cluster;
  } catch (err) {
    await stop();
    throw err;
  }
}
