// Leader election with the grant of deploy/krane-rbac.yaml: krane may get, create and update
// Leases in namespace unkey and nothing cluster-scoped, so a create of the (existing) namespace
// is refused 403, as a real API server refuses an identity without that grant (RBAC is decided
// before existence). A proxy in front of the simulator answers that refusal; krane must lead
// anyway. Before issue 24 it created the namespace first and never led on a real cluster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaderElector, leaseName } from '../../src/kube/leader';
import { simKubeConfig } from '../../src/kube-sim';
import { faultProxy, logger, startSim, statusBody, until } from './helpers';

const { sim, api } = await startSim(20);
const proxy = await faultProxy(sim.url, (req) =>
  req.method === 'POST' && req.path.startsWith('/api/v1/namespaces') && !req.path.includes('/leases')
    ? { status: 403, body: statusBody(403, 'Forbidden', 'namespaces is forbidden: User "system:serviceaccount:krane:krane" cannot create resource "namespaces" in API group "" at the cluster scope', { kind: 'namespaces' }) }
    : undefined,
);

test('krane leads with only its namespaced Lease grant (no namespace create)', async () => {
  const e = new LeaderElector({ kubeConfig: simKubeConfig(proxy.url), region: 'rbac-1', identity: 'krane-a', logger, onStartedLeading: () => {}, onStoppedLeading: () => {} });
  e.start();
  try {
    await until(() => e.isLeader, 10_000);
    const lease = (await api.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'unkey', name: leaseName('rbac-1') })) as any;
    assert.equal(lease.spec.holderIdentity, 'krane-a');
  } finally {
    await e.stop();
  }
});
