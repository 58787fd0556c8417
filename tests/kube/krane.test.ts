import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { startKrane, type FeedWatcherOptions } from '../../src/modes/krane';
import { PermanentError } from '../../src/sync/wire';
import { refKey, type ApplyState, type ResourceRef } from '../../src/sync/wire';
import type { KraneConfig } from '../../src/config';
import { fakeCtrl, logger, startSim, until } from './helpers';
import { deploymentState, policyState, routesState, sentinelState } from './fixtures';

const { sim, api } = await startSim(30);

/** Stands in for the change-feed watcher: one full snapshot, then GC, as the real one does. */
function snapshotWatcher(items: { ref: ResourceRef; state: ApplyState }[]) {
  return (o: FeedWatcherOptions) => ({
    async start() {
      for (const it of items) {
        try {
          await o.controller.apply(it.ref, it.state);
        } catch (err) {
          if (err instanceof PermanentError) o.onPermanentFailure(it.ref, err, it.state);
          else throw err;
        }
      }
      await o.controller.gc(new Set(items.map((i) => refKey(i.ref))));
    },
    async stop() {},
  });
}

test('startKrane: snapshot applied, statuses and a permanent failure reach ctrl, probes and metrics served', async () => {
  const ctrl = await fakeCtrl();
  // an unlabelled object in the way of one deployment: a permanent failure to report
  await api.objects.create({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'dep-blocked', namespace: 'unkey' }, spec: { selector: { a: 'b' }, ports: [{ port: 80 }] },
  } as any);
  const r = (type: ResourceRef['type'], id: string): ResourceRef => ({ type, id, region: 'us-east-1' });
  const cfg: KraneConfig = {
    region: 'us-east-1', controlPlane: ctrl.url, token: 'secret', listen: { host: '127.0.0.1', port: 0 }, resyncInterval: 60_000, logLevel: 'silent',
  } as KraneConfig;
  const krane = await startKrane(cfg, {
    logger,
    kubeConfig: sim.kubeConfig(),
    createWatcher: snapshotWatcher([
      { ref: r('deployment_topology', 'dep-k'), state: deploymentState({ deploymentId: 'dep-k', replicas: 1 }) },
      { ref: r('deployment_topology', 'dep-blocked'), state: deploymentState({ deploymentId: 'dep-blocked' }) },
      { ref: r('sentinel', 'snt-k'), state: sentinelState({ sentinelId: 'snt-k', environmentId: 'env-k', replicas: 1 }) },
      { ref: r('cilium_network_policy', 'cnp-k'), state: policyState({ policyId: 'cnp-k', environmentId: 'env-k' }) },
    ]),
    tuning: { reporterFlushMs: 10 },
  });
  try {
    const bodies = (path: string) => ctrl.reports.filter((x) => x.path === path).map((x) => x.body);
    await until(() => bodies('/v1/cluster/deployments/status').flatMap((b) => b.instances).some((i: any) => i.podName === 'dep-k-0' && i.status === 'running'));
    await until(() => bodies('/v1/cluster/sentinels/status').flatMap((b) => b.sentinels).some((s: any) => s.sentinelId === 'snt-k' && s.health === 'healthy'));
    const failure = await until(() => bodies('/v1/cluster/deployments/status').flatMap((b) => b.applies).find((f: any) => f.resource.id === 'dep-blocked'));
    assert.equal(failure.outcome, 'failed');
    assert.equal(failure.code, 'ERR_KUBE_UNMANAGED_CONFLICT');
    assert.match(failure.reason, /without app.kubernetes.io\/managed-by=krane/);
    assertEvery(bodies('/v1/cluster/deployments/status'), (b) => b.region === 'us-east-1');

    assert.equal((await fetch(`${krane.url}/livez`)).status, 200);
    const ready = await until(async () => {
      const res = await fetch(`${krane.url}/readyz`);
      return res.status === 200 ? res : undefined;
    });
    assert.equal(((await ready.json()) as { status: string }).status, 'ready');
    const metrics = await (await fetch(`${krane.url}/metrics`)).text();
    assert.match(metrics, /krane_kube_requests\{verb="apply"[^}]*\} [1-9]/);
    assert.match(metrics, /krane_status_reports_sent_total/);
  } finally {
    await krane.close();
  }
});

/** RBAC verbs each simulator verb needs. Server-side apply that creates is also authorised as create. */
const RBAC_FOR: Record<string, string[]> = { apply: ['patch', 'create'], get: ['get'], list: ['list'], watch: ['watch'], delete: ['delete'] };

test('deploy/krane-rbac.yaml grants exactly what krane uses, and nothing cluster-wide', async () => {
  // A simulator of its own, so its request accounting holds only this krane's traffic: apply
  // every kind (the deployment autoscaled, so its HPA too, with a minimum of 2 that krane sets
  // through /scale on a StatefulSet created at the default 1), watch statuses, then GC one
  // resource of each kind (deletes).
  const own = await startSim(30);
  const r = (type: ResourceRef['type'], id: string): ResourceRef => ({ type, id, region: 'us-east-1' });
  const items = [
    { ref: r('deployment_topology', 'dep-rbac'), state: deploymentState({ deploymentId: 'dep-rbac', replicas: 2, autoscaling: { minReplicas: 2, maxReplicas: 3, cpuUtilization: 70 } }) },
    { ref: r('sentinel', 'snt-rbac'), state: sentinelState({ sentinelId: 'snt-rbac', environmentId: 'env-rbac', replicas: 1 }) },
    { ref: r('cilium_network_policy', 'cnp-rbac'), state: policyState({ policyId: 'cnp-rbac', environmentId: 'env-rbac' }) },
    { ref: r('environment_routes', 'env-rbac'), state: routesState({ environmentId: 'env-rbac' }) },
  ];
  const ctrl = await fakeCtrl();
  // The GC brake off (fraction 1): this GC deletes every managed object on purpose.
  // Leader election and the sentinel credentials on, as deploy/krane.yaml runs krane.
  const secretsFile = join(mkdtempSync(join(tmpdir(), 'krane-rbac-')), 'credentials.env');
  writeFileSync(secretsFile, 'DB_PASSWORD=x\n');
  const cfg = { region: 'us-east-1', controlPlane: ctrl.url, token: 'secret', listen: { host: '127.0.0.1', port: 0 }, resyncInterval: 60_000, logLevel: 'silent', gcMaxFraction: 1, leaderElect: true, sentinelSecretsFile: secretsFile } as KraneConfig;
  const krane = await startKrane(cfg, { logger, kubeConfig: own.sim.kubeConfig(), createWatcher: snapshotWatcher(items) });
  try {
    await until(async () => (await fetch(`${krane.url}/readyz`)).status === 200);
    // A standby is ready before it leads: wait for the leader's applies of every kind.
    const applied = () => own.sim.stats.snapshot().byResource as Record<string, Record<string, number>>;
    await until(() => ['secrets', 'statefulsets', 'deployments', 'poddisruptionbudgets', 'ciliumnetworkpolicies', 'configmaps'].every((k) => applied()[k]?.apply), 10_000);
    await until(() => krane.controller.stats.applied >= 8, 10_000);
    await krane.controller.gc(new Set());
    assert.ok(krane.controller.stats.deleted >= 6, JSON.stringify(krane.controller.stats));
  } finally {
    await krane.close();
  }

  const docs = loadAllYaml(readFileSync(new URL('../../deploy/krane-rbac.yaml', import.meta.url), 'utf8')) as any[];
  assert.ok(!docs.some((d) => d.kind === 'ClusterRole' || d.kind === 'ClusterRoleBinding'));
  const granted = new Set<string>();
  for (const role of docs.filter((d) => d.kind === 'Role')) {
    for (const rule of role.rules) for (const res of rule.resources) for (const verb of rule.verbs) granted.add(`${res}:${verb}`);
    assert.ok(docs.some((d) => d.kind === 'RoleBinding' && d.metadata.namespace === role.metadata.namespace && d.roleRef.name === role.metadata.name));
  }
  const used = new Set<string>();
  for (const [resource, verbs] of Object.entries(own.sim.stats.snapshot().byResource)) {
    for (const v of Object.keys(verbs)) for (const rbac of RBAC_FOR[v] ?? [v]) used.add(`${resource.replace(/\/status$/, '')}:${rbac}`);
  }
  assert.deepEqual([...used].filter((u) => !granted.has(u)).sort(), [], 'krane used verbs the RBAC does not grant');
  assert.deepEqual([...granted].filter((g) => !used.has(g)).sort(), [], 'RBAC grants verbs krane did not use');
});
