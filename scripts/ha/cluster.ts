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
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../src/net';
import { etcdArgs, FAST_TIMING, haproxyConfig, patroniConfig, pgbouncerConfig, pgbouncerUserlist, type Credentials, type Ports, type Timing } from './config';

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
  /** Through PgBouncer (transaction mode) to the primary; prepared statements off. */
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

/** uid/gid to run as: `postgres` when we are root, else ourselves. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  if (!Number.isInteger(uid) || uid <= 0) throw new Error('running as root needs a `postgres` user (the postgresql package creates it)');
  return { uid, gid: id('-g') };
}

function chownTree(path: string, who: { uid: number; gid: number } | undefined): void {
  if (!who) return;
  chownSync(path, who.uid, who.gid);
  if (statSync(path).isDirectory()) for (const f of readdirSync(path)) chownTree(join(path, f), who);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(what: string, ms: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(delay);
  }
}

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const r = await fetch(url, { signal: AbortSignal.timeout(3_000) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

interface Proc {
  name: string;
  cmd: string;
  args: string[];
  child?: ChildProcess;
  starts: number;
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

  const launch = (p: Proc) => {
    p.starts++;
    const log = openSync(join(dir, 'logs', `${p.name}.${p.starts}.log`), 'a');
    p.child = spawn(p.cmd, p.args, {
      stdio: ['ignore', log, log],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8' },
      ...(who ?? {}),
    });
    p.child.on('error', () => {});
  };
  const running = (p: Proc | undefined) => !!p?.child && p.child.exitCode === null && p.child.signalCode === null;
  const add = (name: string, cmd: string, args: string[]) => {
    const p: Proc = { name, cmd, args, starts: 0 };
    procs.set(name, p);
    launch(p);
    return p;
  };

  const nodes: HaNode[] = nodePorts.map((p, i) => {
    const ndir = join(dir, `node${i}`);
    return {
      name: `node${i}`,
      index: i,
      pgPort: p.pg,
      restPort: p.rest,
      dir: ndir,
      url: (db = database) => `postgres://${credentials.superuser.username}:${credentials.superuser.password}@127.0.0.1:${p.pg}/${db}`,
    };
  });
  const postmasterPid = (n: HaNode): number | undefined => {
    try {
      const pid = Number(readFileSync(join(n.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  const killPid = (pid: number | undefined) => {
    if (!pid) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  // Whatever happens to this process, no PostgreSQL or Patroni of ours outlives it.
  const onExit = () => {
    for (const p of procs.values()) if (running(p)) killPid(p.child!.pid);
    for (const n of nodes) killPid(postmasterPid(n));
  };
  process.once('exit', onExit);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // Patroni stops its PostgreSQL on SIGTERM (fast shutdown); what is still there after a
    // grace (a hung Patroni, an orphaned postmaster of a killed one) is killed.
    const graceful = [...procs.values()].filter(running).map(
      (p) =>
        new Promise<void>((resolve) => {
          p.child!.once('exit', () => resolve());
          p.child!.kill('SIGTERM');
        }),
    );
    await Promise.race([Promise.all(graceful), sleep(20_000)]);
    onExit();
    process.off('exit', onExit);
    if (!o.keepDir && !o.dir) rmSync(dir, { recursive: true, force: true });
  };

  try {
    chownTree(dir, who);
    add('etcd', 'etcd', etcdArgs(dir, ports));
    await waitFor('etcd healthy', waitMs, async () => ((await getJson(`http://127.0.0.1:${ports.etcdClient}/health`)).body?.health === 'true' ? true : undefined));

    const startNode = (n: HaNode) => {
      mkdirSync(n.dir, { recursive: true, mode: 0o700 });
      const cfg = patroniConfig({ scope, name: n.name, dir: n.dir, binDir, ports, index: n.index, credentials, synchronous: !!o.synchronous, timing: o.timing ?? FAST_TIMING, durable: !!o.durable, parameters: o.parameters, maximumLagOnFailover: o.maximumLagOnFailover });
      writeFileSync(join(n.dir, 'patroni.yml'), JSON.stringify(cfg, null, 2), { mode: 0o600 });
      chownTree(n.dir, who);
      add(n.name, 'patroni', [join(n.dir, 'patroni.yml')]);
    };
    const rest = (n: HaNode, path: string) => getJson(`http://127.0.0.1:${n.restPort}${path}`);

    const members = async (): Promise<MemberView[]> => {
      for (const n of nodes) {
        if (!running(procs.get(n.name))) continue;
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
    const nodeNamed = (name: string) => {
      const n = nodes.find((x) => x.name === name);
      if (!n) throw new Error(`no node ${name}`);
      return n;
    };
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

    startNode(nodes[0]!);
    const first = await waitLeader();
    // The database ctrl uses, created once on the first primary (standbys copy it).
    const { default: postgres } = await import('postgres');
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
    writeFileSync(join(dir, 'pgbouncer.ini'), pgbouncerConfig(dir, ports, database));
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
      poolerUrl: url(ports.pgbouncer, '?prepare=false'),
      multiHostUrl: `postgres://${su.username}:${su.password}@${nodes.map((n) => `127.0.0.1:${n.pgPort}`).join(',')}/${database}?target_session_attrs=read-write`,
      members,
      leader,
      waitLeader,
      waitStandby,
      async switchover(candidate) {
        const from = await waitLeader();
        const to = candidate ?? nodes.find((n) => n.name !== from && running(procs.get(n.name)))?.name;
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
        const p = procs.get(name)!;
        const pm = postmasterPid(n);
        if (running(p)) {
          const exited = new Promise<void>((resolve) => p.child!.once('exit', () => resolve()));
          killPid(p.child!.pid);
          await exited;
        }
        killPid(pm);
        // The postmaster is gone when its pid no longer answers a signal 0.
        await waitFor(`${name}'s postmaster gone`, waitMs, async () => {
          if (!pm) return true;
          try {
            process.kill(pm, 0);
            return undefined;
          } catch {
            return true;
          }
        });
      },
      async start(name) {
        const p = procs.get(name)!;
        if (!running(p)) launch(p);
      },
      isRunning: (name) => running(procs.get(name)),
      stop,
    };
    if (first !== nodes[0]!.name) throw new Error(`expected node0 to lead first, got ${first}`);
    // HAProxy and PgBouncer are up when a session through each lands on the primary.
    for (const [what, u] of [['HAProxy', cluster.primaryUrl], ['PgBouncer', cluster.poolerUrl]] as const) {
      await waitFor(`${what} reaches the primary`, waitMs, async () => {
        const s = postgres(u, { max: 1, onnotice: () => {}, connect_timeout: 3 });
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
