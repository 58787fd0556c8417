// The chaos run's database as a Patroni cluster (`bench:chaos -- --ha`, issue 35): a primary and
// a synchronous standby (scripts/ha/cluster.ts), reached by ctrl as a user would run it: its pool
// through PgBouncer (behind each replica's fault proxy), LISTEN through HAProxy's primary port,
// full syncs from the standby. The harness's own connection goes through HAProxy's primary port.
// The faults of this database: pg-failover (the primary's node killed, Patroni promotes the
// standby, the killed node rejoins after the fault), pg-switchover (planned), and pg-restart as a
// restart of the primary through Patroni (no failover).
import { startHaCluster, type HaCluster } from '../../scripts/ha/cluster';
import type { Postgres } from './processes';

const su = (c: HaCluster) => `${c.credentials.superuser.username}:${c.credentials.superuser.password}`;

export async function startHaDatabase(dir: string): Promise<Postgres> {
  const cluster = await startHaCluster({ nodes: 2, synchronous: true, dir, keepDir: true });
  const port = (u: string) => Number(new URL(u).port);
  const urlOn = (p: number) => (db: string) => `postgres://${su(cluster)}@127.0.0.1:${p}/${db}`;
  const primaryPort = port(cluster.primaryUrl);
  /** The cluster whole again: a primary, and every node streaming as a standby of it. */
  const whole = async () => {
    const leader = await cluster.waitLeader();
    for (const n of cluster.nodes) if (n.name !== leader) await cluster.waitStandby(n.name);
  };
  return {
    port: primaryPort,
    urlFor: urlOn(primaryPort),
    ha: {
      poolerPort: port(cluster.poolerUrl),
      userinfo: su(cluster),
      directUrlFor: urlOn(primaryPort),
      readUrlFor: urlOn(port(cluster.replicaUrl)),
      async failover(downMs) {
        const leader = await cluster.waitLeader();
        await cluster.kill(leader);
        await cluster.waitLeader(leader);
        await new Promise((r) => setTimeout(r, downMs));
        await cluster.start(leader);
        await whole();
      },
      async switchover() {
        await whole();
        await cluster.switchover();
        await whole();
      },
    },
    // pg-restart: Patroni restarts the primary's PostgreSQL (fast shutdown, start), no failover.
    async stop() {
      const leader = await cluster.waitLeader();
      const n = cluster.nodes.find((x) => x.name === leader)!;
      const r = await fetch(`http://127.0.0.1:${n.restPort}/restart`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(120_000) });
      if (!r.ok) throw new Error(`Patroni restart of ${leader} answered ${r.status}: ${await r.text()}`);
    },
    async start() {
      for (const n of cluster.nodes) if (!cluster.isRunning(n.name)) await cluster.start(n.name);
      await whole();
    },
    close: () => cluster.stop(),
  };
}
