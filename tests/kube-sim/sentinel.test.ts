// A realistic set of sentinel-like resources (the shapes krane applies): apply twice is a
// no-op, pods become available only after minReadySeconds, and the PDB status follows them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { PatchStrategy } from '@kubernetes/client-node';
import { recordWatch, startSim, waitFor } from './helpers';

const labels = { 'app.kubernetes.io/name': 'sentinel', 'app.kubernetes.io/managed-by': 'krane', 'unkey.com/environment': 'env-1' };

const resources = [
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'sentinel-env-1', namespace: 'sentinel', labels },
    spec: {
      replicas: 2,
      minReadySeconds: 5,
      selector: { matchLabels: { 'unkey.com/environment': 'env-1' } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels },
        spec: {
          tolerations: [{ key: 'node-class', operator: 'Equal', value: 'sentinel', effect: 'NoSchedule' }],
          topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { 'unkey.com/environment': 'env-1' } } }],
          containers: [
            {
              name: 'sentinel',
              image: 'ghcr.io/unkeyed/sentinel:v1',
              ports: [
                { name: 'http', containerPort: 8040, protocol: 'TCP' },
                { name: 'gossip-tcp', containerPort: 7946, protocol: 'TCP' },
                { name: 'gossip-udp', containerPort: 7946, protocol: 'UDP' },
              ],
              env: [{ name: 'ENVIRONMENT_ID', value: 'env-1' }],
              resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '250m', memory: '256Mi' } },
              livenessProbe: { httpGet: { path: '/_unkey/internal/health', port: 8040 }, periodSeconds: 10 },
              readinessProbe: { httpGet: { path: '/health/ready', port: 8040 }, periodSeconds: 5 },
            },
          ],
        },
      },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sentinel-env-1', namespace: 'sentinel', labels },
    spec: { type: 'ClusterIP', selector: { 'unkey.com/environment': 'env-1' }, ports: [{ name: 'http', port: 8040, targetPort: 8040, protocol: 'TCP' }] },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sentinel-env-1-gossip', namespace: 'sentinel', labels },
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: { 'unkey.com/environment': 'env-1' },
      ports: [
        { name: 'gossip-tcp', port: 7946, protocol: 'TCP' },
        { name: 'gossip-udp', port: 7946, protocol: 'UDP' },
      ],
    },
  },
  {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: 'sentinel-env-1', namespace: 'sentinel', labels },
    spec: { minAvailable: 1, selector: { matchLabels: { 'unkey.com/environment': 'env-1' } } },
  },
  {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumNetworkPolicy',
    metadata: { name: 'sentinel-env-1-gossip', namespace: 'sentinel', labels },
    spec: {
      endpointSelector: { matchLabels: { 'unkey.com/environment': 'env-1' } },
      ingress: [{ fromEndpoints: [{ matchLabels: { 'unkey.com/environment': 'env-1' } }], toPorts: [{ ports: [{ port: '7946', protocol: 'TCP' }, { port: '7946', protocol: 'UDP' }] }] }],
    },
  },
];

test('sentinel resources: apply twice is a no-op; availability waits for minReadySeconds; PDB status', async () => {
  // minReadySeconds 5 × 0.05 = 250 ms of availability delay after Ready, far longer than
  // the 10 ms polling that sees the pods become Ready.
  const f = await startSim({ readyDelayMs: 5, minReadyScale: 0.05, namespaces: ['default', 'sentinel'] });
  try {
    const applyAll = () => Promise.all(resources.map((r) => f.objects.patch(structuredClone(r) as any, undefined, undefined, 'krane', true, PatchStrategy.ServerSideApply)));
    const watch = await recordWatch(f.kc, '/apis/apps/v1/namespaces/sentinel/deployments', { resourceVersion: f.sim.api.currentResourceVersion });
    const first = await applyAll();
    const gossip = first[2] as any;
    assert.equal(gossip.spec.clusterIP, 'None');
    assert.equal(gossip.spec.ports.length, 2, 'one port number as TCP and UDP stays two ports');

    const d = await waitFor('available', async () => {
      const x = await f.apps.readNamespacedDeployment({ name: 'sentinel-env-1', namespace: 'sentinel' });
      return x.status?.availableReplicas === 2 ? x : undefined;
    });
    assert.equal(d.status?.updatedReplicas, 2);
    await waitFor('available event', () => watch.events.some((e) => e.object.status?.availableReplicas === 2));
    watch.stop();
    assert.ok(
      watch.events.some((e) => e.object.status?.readyReplicas === 2 && (e.object.status.availableReplicas ?? 0) < 2),
      'ready pods are not available before minReadySeconds',
    );

    const pdb = await waitFor('pdb status', async () => {
      const p = (await f.objects.read({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'sentinel-env-1', namespace: 'sentinel' } })) as any;
      return p.status?.currentHealthy === 2 ? p : undefined;
    });
    assert.equal(pdb.status.expectedPods, 2);
    assert.equal(pdb.status.desiredHealthy, 1);
    assert.equal(pdb.status.disruptionsAllowed, 1);

    await f.sim.stats.reset();
    const second = await applyAll();
    const stats = f.sim.stats.snapshot();
    assert.equal(stats.byVerb.apply, resources.length);
    assert.equal(stats.mutations, 0, 'second apply changed nothing');
    assert.deepEqual(second.map((o) => o.metadata?.resourceVersion), await Promise.all(resources.map(async (r) => (await f.objects.read(structuredClone(r) as any)).metadata?.resourceVersion)));
    assertEvery(second, (o) => o.metadata?.generation === undefined || o.metadata.generation === 1);
  } finally {
    await f.close();
  }
});
