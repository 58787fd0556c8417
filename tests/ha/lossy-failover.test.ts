// Failover with loss, detected (issue 35): ctrl on a Patroni cluster in asynchronous mode, one
// deploy stream, one failover that loses the last transactions. The standby streams from the
// primary through a proxy; the test black-holes it, so what the primary commits next never
// reaches the standby: thousands of transaction ids, then a whole deploy (D1) that krane
// applies, so krane's cursor lies in that lost history. The primary is killed and Patroni
// promotes the standby, which hands out those transaction ids again. A deploy after the
// failover (D2) must reach the cluster: its change sorts before krane's stale cursor, so it is
// delivered only if the cursor from the lost history is refused (410) and krane full-syncs,
// which also removes D1's workload (the database no longer has D1).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { startHaCluster, type HaCluster } from '../../scripts/ha/cluster';
import { FaultProxy } from '../../bench/chaos/proxy';
import { KubeClient } from '../../src/kube/client';
import { WORKLOAD_NAMESPACE } from '../../src/sync/wire';
import { deploymentIn, until } from '../helpers/stack';
import { haStack } from './stack';

const REGION = 'us-east-1';
/** Transaction ids the lost history takes: far more than the new primary writes between its
 *  promotion and D2's change (ctrl's own bookkeeping is tens of transactions). */
const LOST_XIDS = 5_000;

let proxy: FaultProxy | undefined;
const cluster: HaCluster = await startHaCluster({
  nodes: 2,
  synchronous: false,
  // node0's standby streams through the proxy, so the test decides what it receives.
  advertise: async (i, pg) => {
    if (i !== 0) return pg;
    proxy = new FaultProxy([{ host: '127.0.0.1', port: pg }]);
    return proxy.listen();
  },
  // The lost WAL (the burnt ids and D1) must not stop Patroni from promoting the standby:
  // this test is about what ctrl does after a lossy failover, not about Patroni's limit.
  maximumLagOnFailover: 256 * 1024 * 1024,
});
const { stack, sql, watchers } = await haStack(cluster, {
  regions: [REGION],
  closeFirst: [async () => proxy?.close()],
});

const kube = () => new KubeClient(stack.regions.get(REGION)!.sim.sim.kubeConfig());
const statefulSets = async (id: string) => (await kube().list('apps/v1', 'StatefulSet', WORKLOAD_NAMESPACE, `unkey.com/deployment.id=${id}`)).items;
const cursorTxid = () => BigInt(watchers.at(-1)!.cursor!.split(':')[1]!);

/**
 * Waits until `name` has replayed everything the primary has written so far. waitStandby asks
 * Patroni only whether the node is a running replica, not whether it streams or how far behind
 * it is; a standby that had not caught up when the test cut its WAL was promoted without
 * ctrl's migrations, and ctrl then found no tables (a 500 at the lost deployment, twice in CI
 * under load; the message showed `relation "agent_tokens" does not exist`).
 */
async function replayedUpToPrimary(name: string): Promise<void> {
  const lsn = (await sql<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`)[0]!.lsn;
  const standby = postgres(cluster.nodes.find((n) => n.name === name)!.url(), { max: 1, onnotice: () => {} });
  try {
    await until(async () => (await standby<{ ok: boolean }[]>`SELECT pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn AS ok`)[0]!.ok, 120_000, `${name} replayed up to the primary`);
  } finally {
    await standby.end({ timeout: 1 });
  }
}

async function deploy(): Promise<string> {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], replicas: 1 } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id;
}

test('after an asynchronous failover that lost transactions, krane drops its cursor from the lost history and a new deploy reaches the cluster', { timeout: 300_000 }, async () => {
  const d0 = await deploy();
  assert.equal((await deploymentIn(stack, d0, ['ready', 'failed'], 60_000)).status, 'ready');
  await cluster.waitStandby('node1');
  await replayedUpToPrimary('node1');

  // From here on nothing the primary writes reaches the standby.
  proxy!.blackhole();
  await sql.unsafe(`DO $$ BEGIN FOR i IN 1..${LOST_XIDS} LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`).simple();
  const d1 = await deploy();
  assert.equal((await deploymentIn(stack, d1, ['ready', 'failed'], 60_000)).status, 'ready');
  assert.equal((await statefulSets(d1)).length, 1, 'krane applied D1 from the history about to be lost');
  const lostCursor = cursorTxid();

  // The primary dies with the standby LOST_XIDS transactions and a deploy behind; the held
  // WAL is dropped, never delivered. Patroni promotes the standby.
  proxy!.cut();
  await cluster.kill('node0');
  assert.equal(await cluster.waitLeader('node0'), 'node1');

  // The precondition of the defect: the new primary hands out ids below krane's cursor.
  const [row] = await until(async () => sql<{ next: string }[]>`SELECT pg_current_xact_id()::text AS next`, 60_000, 'a write on the new primary');
  const next = row!.next;
  assert.ok(BigInt(next) < lostCursor, `new primary's txid ${next} reuses ids below krane's cursor ${lostCursor}`);

  // D1 is gone with the lost history; a new deploy must reach the cluster all the same.
  // A 500 here was seen once in CI (1 run in 5) and not again in 4 runs under load: the
  // message carries ctrl's recent warnings and errors (the failure's class, code and SQLSTATE)
  // so the next one says what it was (the ring leaves out the revocation listeners' reconnect
  // warnings, which a failover logs by the thousand).
  const lost = await stack.api(`/v1/deployments/${d1}`);
  assert.equal(lost.status, 404, `D1 was lost with the asynchronous failover: ${JSON.stringify(lost.body)}; ctrl's recent log: ${stack.recentLog.slice(-10).join('\n')}`);
  const d2 = await deploy();
  const d2View = await deploymentIn(stack, d2, ['ready', 'failed'], 120_000);
  assert.equal(d2View.status, 'ready', JSON.stringify(d2View));
  assert.equal((await statefulSets(d2)).length, 1);

  // krane was sent back to a full sync (410), which also removed the workload the database
  // no longer knows, and kept D0's.
  assert.ok(watchers.some((w) => w.stats.resets > 0), 'a cursor from the lost history answered 410');
  await until(async () => (await statefulSets(d1)).length === 0, 60_000, "D1's StatefulSet removed by the full sync's GC");
  assert.equal((await statefulSets(d0)).length, 1, "D0's StatefulSet kept");
});
