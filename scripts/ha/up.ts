// scripts/ha-up.sh: a Patroni + etcd PostgreSQL cluster on this machine (a primary and
// standbys, HAProxy, PgBouncer; scripts/ha/cluster.ts) for trying ctrl against it. Prints the
// URLs and the ctrl command line, writes them to <dir>/ha.json, and runs until Ctrl-C, which
// stops every process. docs/ha.md walks through it, failover included.
import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHaCluster } from './cluster';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '2' },
    async: { type: 'boolean', default: false },
    dir: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
const nodes = Number(values.nodes);
if (values.help || !Number.isInteger(nodes) || nodes < 1 || nodes > 5) {
  console.error('usage: scripts/ha-up.sh [--nodes 2 (1-5)] [--async] [--dir DIR (kept; default a temporary one, removed on exit)]');
  process.exit(values.help ? 0 : 2);
}
console.error(`starting etcd, ${nodes} Patroni node(s) (${values.async ? 'asynchronous' : 'synchronous'} replication), HAProxy and PgBouncer ...`);
const cluster = await startHaCluster({ nodes, synchronous: !values.async, durable: true, ...(values.dir ? { dir: values.dir } : {}) });
const info = {
  dir: cluster.dir,
  databaseUrl: cluster.poolerUrl,
  databaseDirectUrl: cluster.primaryUrl,
  databaseReadUrl: cluster.replicaUrl,
  multiHostUrl: cluster.multiHostUrl,
  nodes: cluster.nodes.map((n) => ({ name: n.name, url: n.url(), patroni: `http://127.0.0.1:${n.restPort}` })),
};
writeFileSync(join(cluster.dir, 'ha.json'), JSON.stringify(info, null, 2) + '\n');
console.log(`
cluster up: ${(await cluster.members()).map((m) => `${m.name} ${m.role}`).join(', ')}
  written to ${join(cluster.dir, 'ha.json')}

ctrl through PgBouncer, LISTEN direct, full syncs from a standby:
  unkey-infra ctrl --admin-token "$(openssl rand -hex 24)" \\
    --database-url '${info.databaseUrl}' \\
    --database-direct-url '${info.databaseDirectUrl}' \\
    --database-read-url '${info.databaseReadUrl}'

or without HAProxy and PgBouncer (the driver finds the primary itself):
    --database-url '${info.multiHostUrl}'

a switchover:   curl -s -XPOST http://127.0.0.1:${cluster.nodes[0]!.restPort}/switchover -d '{"leader":"<primary>","candidate":"<standby>"}'
who leads:      curl -s http://127.0.0.1:${cluster.nodes[0]!.restPort}/cluster
logs:           ${join(cluster.dir, 'logs')}
Ctrl-C stops everything${values.dir ? '' : ' and removes the directory'}.
`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  console.error('stopping ...');
  await cluster.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
// Keeps the process alive until a signal.
setInterval(() => {}, 1 << 30);
