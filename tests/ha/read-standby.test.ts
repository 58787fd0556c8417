// Full syncs read a hot standby (ctrl's --database-read-url), and an agent never receives a
// snapshot older than a cursor it was already given (issue 35, DESIGN section 13). With the
// standby cut off from the primary's WAL (a proxy on the replication connection holds it: a
// standby lagging as far as the test wants; Patroni would undo a paused replay), a deploy reaches krane through the feed (its cursor moves past the
// deploy's change), then krane full-syncs: the standby's snapshot lacks the deploy, so ctrl must
// read the primary instead; had it used the standby, krane's GC would have deleted the running
// deploy. With the WAL flowing again, the next full sync reads the standby.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { startHaCluster } from '../../scripts/ha/cluster';
import { FaultProxy } from '../../bench/chaos/proxy';
import { KubeClient } from '../../src/kube/client';
import { WORKLOAD_NAMESPACE } from '../../src/sync/wire';
import { deploymentIn, until } from '../helpers/stack';
import { haStack } from './stack';

const REGION = 'us-east-1';
let proxy: FaultProxy | undefined;
const cluster = await startHaCluster({
  nodes: 2,
  advertise: async (i, pg) => {
    if (i !== 0) return pg;
    proxy = new FaultProxy([{ host: '127.0.0.1', port: pg }]);
    return proxy.listen();
  },
});
const { stack, watchers } = await haStack(cluster, {
  regions: [REGION],
  ctrl: { settings: { databaseReadUrl: cluster.replicaUrl } },
  closeFirst: [async () => proxy?.close()],
});
const watcher = () => watchers.at(-1)!;
const statefulSets = async (id: string) =>
  (await new KubeClient(stack.regions.get(REGION)!.sim.sim.kubeConfig()).list('apps/v1', 'StatefulSet', WORKLOAD_NAMESPACE, `unkey.com/deployment.id=${id}`)).items;

/** ctrl's counts of full syncs by where they were read, from /metrics. */
async function snapshotReads(): Promise<{ standby: number; primary: number; fallbacks: number }> {
  const text = await (await fetch(stack.ctrl.url + '/metrics')).text();
  const n = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    standby: n(/^feed_snapshot_reads_total\{[^}]*source="standby"[^}]*\} (\d+)/m),
    primary: n(/^feed_snapshot_reads_total\{[^}]*source="primary"[^}]*\} (\d+)/m),
    fallbacks: n(/^feed_snapshot_standby_fallbacks_total(?:\{[^}]*\})? (\d+)/m),
  };
}

async function fullSync(): Promise<void> {
  const w = watcher();
  const done = w.stats.snapshotsCompleted;
  w.resync();
  await until(() => w.stats.snapshotsCompleted > done, 60_000, 'full sync done');
}

const primarySql = postgres(cluster.primaryUrl, { max: 1, onnotice: () => {} });
const standbySql = postgres(cluster.replicaUrl, { max: 1, onnotice: () => {} });
after(async () => {
  await primarySql.end({ timeout: 1 });
  await standbySql.end({ timeout: 1 });
});

/**
 * Waits until the standby has replayed everything the primary has written so far. A full sync
 * then finds it past the feed's head (no change is written meanwhile), so which one serves the
 * sync does not depend on how fast the machine replays: after the proxy passes WAL again, the
 * standby may take longer than the full sync's one second of patience (a loaded machine, or a
 * WAL receiver that reconnects after wal_retrieve_retry_interval, 5 s).
 */
async function standbyCaughtUp(): Promise<void> {
  const lsn = (await primarySql<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`)[0]!.lsn;
  await until(async () => (await standbySql<{ ok: boolean }[]>`SELECT pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn AS ok`)[0]!.ok, 120_000, 'the standby replayed up to the primary');
}

const position = (cursor: string) => cursor.split(':').slice(1).map(BigInt) as [bigint, bigint];
const notBefore = (a: string, b: string) => {
  const [x, y] = [position(a), position(b)];
  return x[0] > y[0] || (x[0] === y[0] && x[1] >= y[1]);
};

test('a full sync reads the standby only when it has replayed past every cursor handed out; a lagging standby is passed over for the primary', { timeout: 240_000 }, async () => {
  const d0 = (await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], replicas: 1 } })).body.id;
  assert.equal((await deploymentIn(stack, d0, ['ready', 'failed'], 60_000)).status, 'ready');

  // A standby that has caught up serves the full sync.
  await standbyCaughtUp();
  const before = await snapshotReads();
  await fullSync();
  const caughtUp = await snapshotReads();
  assert.equal(caughtUp.standby, before.standby + 1, JSON.stringify({ before, caughtUp }));

  // The standby receives nothing more; a deploy reaches krane through the feed from the primary.
  proxy!.blackhole();
  try {
    const d1 = (await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], replicas: 1 } })).body.id;
    assert.equal((await deploymentIn(stack, d1, ['ready', 'failed'], 60_000)).status, 'ready');
    assert.equal((await statefulSets(d1)).length, 1);
    const given = watcher().cursor!;

    await fullSync();
    const lagging = await snapshotReads();
    assert.equal(lagging.fallbacks, caughtUp.fallbacks + 1, `the lagging standby was passed over: ${JSON.stringify({ caughtUp, lagging })}`);
    assert.equal(lagging.primary, caughtUp.primary + 1, 'the primary served the full sync');
    assert.ok(notBefore(watcher().cursor!, given), `the snapshot's cursor ${watcher().cursor} is not older than ${given}`);
    // The proof that mattered: the snapshot had the deploy, so GC left it running.
    assert.equal((await statefulSets(d1)).length, 1, 'D1 kept by the full sync');
  } finally {
    proxy!.pass();
  }

  // Replaying again, the standby catches up and serves the next full sync.
  await standbyCaughtUp();
  await fullSync();
  assert.equal((await snapshotReads()).standby, caughtUp.standby + 1);
});
