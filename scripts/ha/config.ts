// Pure builders of the HA cluster's configuration files: Patroni's (JSON, which Patroni's YAML
// reader takes as it is), HAProxy's and PgBouncer's, and etcd's command line. Data in, text out;
// cluster.ts writes them and starts the processes. Every setting that differs from the
// packages' defaults carries its reason here, since docs/ha.md sends users to this file.

export interface Ports {
  etcdClient: number;
  etcdPeer: number;
  /** Per node: PostgreSQL and Patroni's REST API. */
  nodes: { pg: number; rest: number; advertised: number }[];
  haproxyPrimary: number;
  haproxyReplica: number;
  haproxyStats: number;
  pgbouncer: number;
}

export interface Credentials {
  superuser: { username: string; password: string };
  replication: { username: string; password: string };
  rewind: { username: string; password: string };
}

export interface Timing {
  /** Leader key TTL (s): how long a dead primary keeps the leadership. */
  ttl: number;
  /** Seconds between Patroni's HA loops. */
  loopWait: number;
  /** Seconds Patroni retries etcd and PostgreSQL before it demotes itself. */
  retryTimeout: number;
}

/**
 * Failover in about twenty seconds: Patroni requires loop_wait + 2 × retry_timeout ≤ ttl, and
 * the leader key's TTL is what a hard-killed primary costs. Patroni's defaults (30/10/10) make
 * it 30 s. The leader demotes itself when etcd or its own PostgreSQL does not answer within
 * retry_timeout, a failover nobody asked for that tests/ha does not expect; 10/1/4 (ten
 * seconds) gave it 4 s, too little where the suite runs beside two CPU burners (.ci/run) and
 * etcd fsyncs its log on a disk the suite's PostgreSQL servers share. 9 s of patience costs
 * 10 s more per hard kill (lossy-failover, bench:failover); a switchover does not wait for it.
 */
export const FAST_TIMING: Timing = { ttl: 20, loopWait: 1, retryTimeout: 9 };

export interface NodeSpec {
  scope: string;
  name: string;
  dir: string;
  binDir: string;
  ports: Ports;
  index: number;
  credentials: Credentials;
  synchronous: boolean;
  timing: Timing;
  /** Keep PostgreSQL's durable settings (fsync); off only for disposable test data. */
  durable: boolean;
  /** Extra PostgreSQL parameters (e.g. wal_receiver_status_interval for a test). */
  parameters?: Record<string, string | number>;
  /** Bytes of WAL a standby may lack and still be promoted (default 1 MiB, Patroni's). */
  maximumLagOnFailover?: number;
}

/** Patroni's configuration of one node. */
export function patroniConfig(n: NodeSpec): Record<string, unknown> {
  const p = n.ports.nodes[n.index]!;
  const c = n.credentials;
  return {
    scope: n.scope,
    name: n.name,
    log: { level: 'INFO' },
    restapi: { listen: `127.0.0.1:${p.rest}`, connect_address: `127.0.0.1:${p.rest}` },
    etcd3: { hosts: [`127.0.0.1:${n.ports.etcdClient}`] },
    bootstrap: {
      dcs: {
        ttl: n.timing.ttl,
        loop_wait: n.timing.loopWait,
        retry_timeout: n.timing.retryTimeout,
        // A standby further behind than this (1 MiB of WAL) is not promoted automatically:
        // Patroni's default. In asynchronous mode it bounds what a failover can lose.
        maximum_lag_on_failover: n.maximumLagOnFailover ?? 1_048_576,
        // Synchronous mode: a commit returns only once the synchronous standby has it, and
        // Patroni promotes only that standby, so a failover loses nothing. Not strict: with
        // the standby gone the primary goes on alone (asynchronously) rather than refusing
        // writes; docs/ha.md says what that costs.
        synchronous_mode: n.synchronous,
        synchronous_mode_strict: false,
        postgresql: {
          // pg_rewind lets a failed primary rejoin as a standby without a new base backup.
          use_pg_rewind: true,
          use_slots: true,
          parameters: {
            wal_level: 'replica',
            hot_standby: 'on',
            // pg_rewind needs hint bits in WAL (or data checksums).
            wal_log_hints: 'on',
            max_wal_senders: 10,
            max_replication_slots: 10,
            max_connections: 300,
            // Full syncs may read a standby (--database-read-url) in one REPEATABLE READ
            // transaction; feedback keeps the primary's vacuum from removing rows that
            // snapshot still sees, which would cancel it on the standby.
            hot_standby_feedback: 'on',
          },
        },
      },
      initdb: [{ encoding: 'UTF8' }, { locale: 'C' }, 'data-checksums'],
      pg_hba: [
        `host replication ${c.replication.username} 127.0.0.1/32 scram-sha-256`,
        'host all all 127.0.0.1/32 scram-sha-256',
      ],
    },
    postgresql: {
      listen: `127.0.0.1:${p.pg}`,
      // What other nodes stream from: a test may put a proxy here to cut replication.
      connect_address: `127.0.0.1:${p.advertised}`,
      data_dir: `${n.dir}/data`,
      bin_dir: n.binDir,
      pgpass: `${n.dir}/pgpass`,
      // A new standby copies the primary with pg_basebackup, which by default waits for a
      // spread checkpoint: 100 s here for a freshly created database. A fast one takes a second.
      basebackup: [{ checkpoint: 'fast' }],
      authentication: {
        superuser: c.superuser,
        replication: c.replication,
        rewind: c.rewind,
      },
      parameters: {
        unix_socket_directories: n.dir,
        // Disposable test data only: fsync off survives a killed process (the OS keeps the
        // pages), not a killed machine.
        ...(n.durable ? {} : { fsync: 'off' }),
        ...n.parameters,
      },
    },
    // No /dev/watchdog on a laptop or a CI machine; production should use one (docs/ha.md).
    watchdog: { mode: 'off' },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
  };
}

/** etcd's command line: one member, on loopback. */
export function etcdArgs(dir: string, ports: Ports): string[] {
  const client = `http://127.0.0.1:${ports.etcdClient}`;
  const peer = `http://127.0.0.1:${ports.etcdPeer}`;
  return [
    '--name', 'etcd0',
    '--data-dir', `${dir}/etcd`,
    '--listen-client-urls', client,
    '--advertise-client-urls', client,
    '--listen-peer-urls', peer,
    '--initial-advertise-peer-urls', peer,
    '--initial-cluster', `etcd0=${peer}`,
    '--initial-cluster-state', 'new',
    '--initial-cluster-token', `unkey-ha-${ports.etcdClient}`,
  ];
}

/**
 * HAProxy: one port that reaches the primary, one that reaches a streaming standby, each
 * decided by Patroni's REST API (/primary, /replica answer 200 only on the right node).
 */
export function haproxyConfig(ports: Ports): string {
  const servers = () => ports.nodes.map((n, i) => `    server node${i} 127.0.0.1:${n.pg} check port ${n.rest}`).join('\n') + '\n';
  return `global
    maxconn 2000

defaults
    mode tcp
    # Long-lived sessions (LISTEN, long transactions of a full sync) must not be cut as idle.
    timeout client 30m
    timeout server 30m
    timeout connect 2s
    timeout check 2s
    # A node is judged every half second; two failed checks take it out, one good one puts it
    # back. on-marked-down cuts its sessions, so clients reconnect to the new primary at once
    # instead of writing into a demoted one until its own timeouts.
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions

listen primary
    bind 127.0.0.1:${ports.haproxyPrimary}
    option httpchk GET /primary
    http-check expect status 200
${servers()}
listen replica
    bind 127.0.0.1:${ports.haproxyReplica}
    option httpchk GET /replica
    http-check expect status 200
${servers()}
listen stats
    mode http
    bind 127.0.0.1:${ports.haproxyStats}
    stats enable
    stats uri /
`;
}

/**
 * PgBouncer in transaction mode in front of `upstream` (HAProxy's primary port in the cluster),
 * for every database name (`*`). Clients must not use prepared statements or pipeline queries
 * through it (PgBouncer 1.18 carries neither across server connections) and must LISTEN on a
 * direct session: ctrl given --database-direct-url does all three (src/store/db.ts).
 */
export function pgbouncerConfig(o: { dir: string; port: number; upstream: { host: string; port: number }; admin: string }): string {
  return `[databases]
* = host=${o.upstream.host} port=${o.upstream.port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${o.port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = ${o.dir}/userlist.txt
pool_mode = transaction
max_client_conn = 2000
; ctrl holds 10 pooled connections per replica; 40 server connections serve four replicas
; without queueing, far under PostgreSQL's max_connections.
default_pool_size = 40
; After a failover the first logins fail until HAProxy points at the new primary: retry each
; second, not after the default 15 s.
server_login_retry = 1
; A server connection that broke with the old primary is dropped, not handed to a client.
server_check_delay = 0
ignore_startup_parameters = extra_float_digits
admin_users = ${o.admin}
`;
}

export function pgbouncerUserlist(users: { username: string; password: string }[]): string {
  return users.map((u) => `"${u.username}" "${u.password}"`).join('\n') + '\n';
}
