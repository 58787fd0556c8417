// The whole loop on one machine: Postgres → ctrl (change feed + status routes) → krane (real
// watcher, controller, status watchers, reporter) → kube-sim → back into Postgres.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { AgentAuth, buildCtrlApp } from '../../src/http';
import { clusterFeedRoutes } from '../../src/http/cluster-feed';
import { clusterStatusRoutes } from '../../src/http/cluster-status';
import { createFeed } from '../../src/sync/feed';
import { startKrane } from '../../src/modes/krane';
import { applyFailures, cilium, deployments, instances, sentinels, topology } from '../../src/store';
import type { KraneConfig } from '../../src/config';
import { logger, startSim, until } from './helpers';

const TOKEN = 'tok-e2e-us-east-1-0123456789';
const agentTokens = { 'us-east-1': TOKEN };
const { sql } = await testDb();
const { sim, api } = await startSim(30);
const feed = createFeed({ sql, logger, heartbeatMs: 200, waitLimitMs: 2000 });
await feed.start();
const auth = new AgentAuth({ sql, logger, configured: agentTokens });
const { app } = await buildCtrlApp({ sql, logger, routes: [clusterFeedRoutes({ sql, feed, auth }), clusterStatusRoutes({ sql, auth })] });
await app.listen({ host: '127.0.0.1', port: 0 });
const ctrlUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const krane = await startKrane(
  { region: 'us-east-1', controlPlane: ctrlUrl, token: TOKEN, listen: { host: '127.0.0.1', port: 0 }, resyncInterval: 60_000, logLevel: 'silent' } as KraneConfig,
  { logger, kubeConfig: sim.kubeConfig(), tuning: { reporterFlushMs: 10 } },
);
after(async () => {
  await krane.close();
  await app.close();
  await feed.close();
  await auth.close();
});

const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };
async function deploy(id: string, image: string, replicas: number): Promise<void> {
  await deployments.insertDeployment(sql, {
    id, ...scope, image, buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas, port: 8080, command: [], env: { A: '1' }, regions: ['us-east-1'],
  });
  await topology.upsertTopology(sql, { deploymentId: id, region: 'us-east-1', workspaceId: 'default', replicas });
}

test('a deployment written to Postgres runs in the cluster and its instances come back', async () => {
  await deploy('dep-e2e-ok', 'registry.example/app:v1', 2);
  await deploy('dep-e2e-crash', 'registry.example/app:crash', 1);
  const ok = await until(async () => {
    const rows = await instances.listInstances(sql, 'dep-e2e-ok');
    return rows.length === 2 && rows.every((r) => r.status === 'running') ? rows : undefined;
  });
  assert.deepEqual(ok.map((r) => r.address), ['dep-e2e-ok-0.dep-e2e-ok.unkey.svc.cluster.local', 'dep-e2e-ok-1.dep-e2e-ok.unkey.svc.cluster.local']);
  const crash = await until(async () => {
    const [row] = await instances.listInstances(sql, 'dep-e2e-crash');
    return row?.reason === 'CrashLoopBackOff' ? row : undefined;
  });
  assert.equal(crash.status, 'failed');

  // stopping is a desired-state change: krane deletes the objects, the instance rows go
  await topology.setTopologyStatus(sql, 'dep-e2e-ok', 'stopped');
  await until(async () => (await instances.listInstances(sql, 'dep-e2e-ok')).length === 0);
  assert.equal(await api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name: 'dep-e2e-ok' }), undefined);
});

test('krane is ready once its first full sync completed, and exports feed counters', async () => {
  const res = await until(async () => {
    const r = await fetch(`${krane.url}/readyz`);
    return r.status === 200 ? r : undefined;
  });
  assert.equal(((await res.json()) as { status: string }).status, 'ready');
  const metrics = await (await fetch(`${krane.url}/metrics`)).text();
  assert.match(metrics, /krane_feed\{counter="snapshotsCompleted"[^}]*\} [1-9]/);
});

test('a sentinel and its environment policy converge, with observed fields written back', async () => {
  const { sentinel } = await sentinels.ensureSentinel(sql, { id: 'snt-e2e', ...scope, region: 'us-east-1', image: 'sentinel:v1', replicas: 2, cpuMillicores: 200, memoryMib: 256 });
  await cilium.ensureCiliumPolicy(sql, { id: 'cnp-e2e', ...scope, region: 'us-east-1' });
  const s = await until(async () => {
    const row = await sentinels.getSentinel(sql, sentinel.id);
    return row?.health === 'healthy' ? row : undefined;
  });
  assert.equal(s.runningImage, 'sentinel:v1');
  assert.equal(s.availableReplicas, 2);
  assert.ok(await api.get({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', namespace: 'sentinel', name: 'gossip-default' }));
  assert.ok(await api.get({ apiVersion: 'v1', kind: 'Service', namespace: 'sentinel', name: 'gossip-default' }));
});

test('a permanent apply failure is reported as that resource\'s failure, and a later successful apply clears it', async () => {
  await api.objects.create({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'dep-e2e-blocked', namespace: 'unkey' }, spec: { selector: { a: 'b' }, ports: [{ port: 80 }] },
  } as any);
  await deploy('dep-e2e-blocked', 'registry.example/app:v1', 1);
  const marker = await until(async () => (await applyFailures.listApplyFailures(sql, 'deployment_topology', 'dep-e2e-blocked'))[0]);
  assert.equal(marker.code, 'ERR_KUBE_UNMANAGED_CONFLICT');
  assert.match(marker.reason, /managed-by=krane/);
  // the operator removes the foreign object; the next change to the deployment applies cleanly
  await api.delete({ apiVersion: 'v1', kind: 'Service', namespace: 'unkey', name: 'dep-e2e-blocked' });
  await topology.upsertTopology(sql, { deploymentId: 'dep-e2e-blocked', region: 'us-east-1', workspaceId: 'default', replicas: 1 });
  const rows = await until(async () => {
    const r = await instances.listInstances(sql, 'dep-e2e-blocked');
    return r.length === 1 && r[0]!.status === 'running' ? r : undefined;
  });
  assert.equal(rows[0]!.podName, 'dep-e2e-blocked-0');
  await until(async () => (await applyFailures.listApplyFailures(sql, 'deployment_topology', 'dep-e2e-blocked')).length === 0);
});
