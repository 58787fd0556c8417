// `npm run bench:regions`: catching up after an outage (issue 11, target ≤ 5 s). krane of one
// region is offline for 2 minutes while 100 changes land for its region (a new sentinel every
// 1.2 s); then it comes back. Measured: from its restart to every change applied in the
// cluster (all 100 sentinel Deployments present in the simulator), plus ctrl's view of the
// region before and after. Everything in-process on its own embedded PostgreSQL.
// Prints one JSON object on the last stdout line.
import { performance } from 'node:perf_hooks';
import { startPostgres } from '../tests/helpers/postgres';
import { startStack } from '../src/modes/stack';
import { Watcher } from '../src/sync/watcher';
import { KubeClient } from '../src/kube/client';
import { newId } from '../src/ids';
import { sentinels, tenancy, withTx } from '../src/store';
import { SENTINEL_NAMESPACE } from '../src/sync/wire';

/** The scenario. */
const OFFLINE_MS = Number(process.argv.find((a) => a.startsWith('--offline-ms='))?.split('=')[1] ?? 120_000);
const CHANGES = 100;
/** Cluster polling step while catching up: small against the seconds measured. */
const POLL_MS = 25;
const REGION = 'eu-west-1';

const pg = await startPostgres();
const stack = await startStack({
  databaseUrl: pg.adminUrl,
  regions: [REGION],
  readyDelayMs: 0,
  logLevel: 'silent',
  sim: { minReadyScale: 0 },
  krane: { createWatcher: (o) => new Watcher(o) },
});
const sql = stack.ctrl.sql;
const api = new KubeClient(stack.regions.get(REGION)!.sim.sim.kubeConfig());
const regionView = async () => {
  const r = await fetch(`${stack.ctrl.url}/v1/regions`, { headers: { authorization: `Bearer ${stack.adminToken}` } });
  return ((await r.json()) as any[])[0];
};
const countSentinels = async () => (await api.list('apps/v1', 'Deployment', SENTINEL_NAMESPACE, 'app.kubernetes.io/managed-by=krane')).items.length;

try {
  // Start from a region that is online and synced, as an operator's would be.
  for (let v = await regionView(); v.status !== 'online' || v.lag.changes > 0 || !v.lastFullSyncAt; v = await regionView()) await new Promise((r) => setTimeout(r, 100));
  const before = await countSentinels().catch(() => 0);
  await stack.stopKrane(REGION);
  const started = performance.now();
  for (let i = 0; i < CHANGES; i++) {
    await withTx(sql, async (tx) => {
      const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
      await tenancy.insertEnvironment(tx, { ...scope, slug: `bench-${i}` });
      await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: REGION, image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
    });
    const due = started + ((i + 1) * OFFLINE_MS) / CHANGES;
    await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
  }
  const offlineView = await regionView();
  const t0 = performance.now();
  await stack.restartKrane(REGION);
  const marks: Record<string, number> = {};
  const watchLeader = (async () => {
    while (!marks.leaderSeen && performance.now() - t0 < 60_000) {
      const v = await regionView();
      if (v.status === 'online' && v.agent.leader && Date.parse(v.lastSeenAt) > Date.now() - 1000) marks.leaderSeen = (performance.now() - t0) / 1000;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  for (;;) {
    if ((await countSentinels()) >= before + CHANGES) break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const catchUpMs = performance.now() - t0;
  await watchLeader;
  // ctrl's view catches up with the next heartbeat after the cursor commits.
  let after = await regionView();
  while (after.lag.changes > 0 || after.status !== 'online') {
    await new Promise((r) => setTimeout(r, 100));
    after = await regionView();
  }
  console.log(
    JSON.stringify({
      bench: 'regions',
      offlineSeconds: OFFLINE_MS / 1000,
      changes: CHANGES,
      reconnectToAppliedSeconds: Number((catchUpMs / 1000).toFixed(2)),
      targetSeconds: 5,
      firstLeaderHeartbeatSeconds: marks.leaderSeen ?? null,
      whileOffline: { status: offlineView.status, lagChanges: offlineView.lag.changes, lagSeconds: offlineView.lag.seconds },
      afterCatchUp: { status: after.status, lagChanges: after.lag.changes },
    }),
  );
} finally {
  await stack.close();
  await pg.stop();
}
