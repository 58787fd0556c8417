// Routes follow the pods that run (issue 33, defect 1): an autoscaled deployment's extra pods get
// traffic. The routes ConfigMap lists a backend's addresses from the instances krane reports
// ready in the region, and a report that changes them changes the routes; before, they came
// from the topology's replicas (the autoscaler's minimum), so with 3 pods running the routes
// listed 1 address. The simulator's autoscaler scales a `cpuhot` image to its maximum and back
// down when its load is set cold, so the order of events is the autoscaler's, not the clock's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentIn } from '../helpers/stack';
import { KubeClient } from '../../src/kube/client';
import { SENTINEL_NAMESPACE, WORKLOAD_NAMESPACE } from '../../src/sync/wire';
import { simulatedCpuLoad } from '../../src/kube-sim/workloads/hpa';
import { deploymentObjectName } from '../../src/kube/manifests';
import { isPodReady, resourceForKind } from '../../src/kube-sim';

const REGION = 'us-east-1';
// Autoscalers evaluated every 200 ms, and the 60 s scale-down window shortened to 1.2 s.
const stack = await testStack({ regions: [REGION], sim: { minReadyScale: 0.001, hpaSyncMs: 200, hpaStabilizationScale: 0.02 } });
const sim = stack.regions.get(REGION)!.sim.sim;
const POD = resourceForKind('v1', 'Pod')!;

/** The addresses the region's routes ConfigMap gives `id` (null: not a backend there). */
async function routedAddresses(id: string): Promise<string[] | null> {
  const cm = await new KubeClient(sim.kubeConfig()).get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: SENTINEL_NAMESPACE, name: 'routes-default' });
  if (!cm) return null;
  const doc = JSON.parse((cm as { data: Record<string, string> }).data['routes.json']!) as { backends: { deploymentId: string; addresses: string[] }[] };
  return doc.backends.find((b) => b.deploymentId === id)?.addresses.slice().sort() ?? null;
}

/** The stable addresses of `id`'s Ready pods in the simulator (the truth krane reports from). */
function readyAddresses(id: string): string[] {
  const name = deploymentObjectName(id);
  return sim.store
    .list(POD, WORKLOAD_NAMESPACE)
    .filter((p) => p.metadata.labels?.['unkey.com/deployment.id'] === id && isPodReady(p as never) && !p.metadata.deletionTimestamp)
    .map((p) => `${p.metadata.name}.${name}.${WORKLOAD_NAMESPACE}.svc.cluster.local`)
    .sort();
}

test('the pods an autoscaler adds get traffic, and those it removes lose it', async () => {
  const created = await stack.api('/v1/deployments', { body: { image: 'registry.local/app:cpuhot-1', regions: [REGION], cpuMillicores: 200, autoscaling: { minReplicas: 1, maxReplicas: 3 } } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.id as string;
  await deploymentIn(stack, id, ['ready']);
  await until(() => readyAddresses(id).length === 3, 20_000, 'the autoscaler at 3 ready pods');
  const three = await until(async () => {
    const routed = await routedAddresses(id);
    return routed?.length === 3 ? routed : undefined;
  }, 20_000, 'three addresses in the routes');
  assert.deepEqual(three, readyAddresses(id));

  sim.autoscalers.setLoad(WORKLOAD_NAMESPACE, deploymentObjectName(id), simulatedCpuLoad('app:cpucold'));
  await until(() => readyAddresses(id).length === 1, 20_000, 'the autoscaler back at 1 ready pod');
  const one = await until(async () => {
    const routed = await routedAddresses(id);
    return routed?.length === 1 ? routed : undefined;
  }, 20_000, 'one address in the routes');
  assert.deepEqual(one, readyAddresses(id));
});
