import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { WORKLOAD_NAMESPACE } from '../../src/sync/protocol';
import { KubeApi } from '../../src/kube/api';

const stack = await testStack();

async function waitStatus(id: string, statuses: string[], ms = 20_000) {
  return until(async () => {
    const r = await stack.api(`/v1/deployments/${id}`);
    return statuses.includes(r.body.status) ? r.body : undefined;
  }, ms, `deployment ${id} in ${statuses.join('/')}`);
}

const apiVersions = { StatefulSet: 'apps/v1', Service: 'v1', Pod: 'v1' } as const;

/** Lists through the unchanged Kubernetes client against the region's simulator. */
async function simObjects(region: string, kind: keyof typeof apiVersions, deploymentId: string): Promise<any[]> {
  const api = new KubeApi(stack.regions.get(region)!.sim.sim.kubeConfig());
  return (await api.list(apiVersions[kind], kind, WORKLOAD_NAMESPACE, `unkey.com/deployment.id=${deploymentId}`)).items;
}

test('deploy to two regions becomes ready; both clusters hold the StatefulSet and headless Service; instances match pods', async () => {
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 2 } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.id;
  const ready = await waitStatus(id, ['ready', 'failed']);
  assert.equal(ready.status, 'ready', ready.error);
  for (const region of ['us-east-1', 'eu-west-1']) {
    const [sts] = await simObjects(region, 'StatefulSet', id);
    assert.ok(sts, `StatefulSet in ${region}`);
    assert.equal(sts.metadata.labels['app.kubernetes.io/managed-by'], 'krane');
    assert.equal(sts.metadata.labels['app.kubernetes.io/component'], 'deployment');
    assert.equal(sts.metadata.labels['unkey.com/environment.id'], 'default');
    const [svc] = await simObjects(region, 'Service', id);
    assert.equal(svc.spec.clusterIP, 'None');
    assert.equal(svc.spec.publishNotReadyAddresses, true);
    const pods = (await simObjects(region, 'Pod', id)).map((p: any) => p.metadata.name).sort();
    const rows = ready.instances.filter((i: any) => i.region === region).map((i: any) => i.podName).sort();
    assert.deepEqual(rows, pods);
    assert.equal(pods.length, 2);
  }
  assert.ok(ready.domains.some((d: any) => d.kind === 'deployment'));
  assert.ok(ready.steps.length > 5, 'the step history is the deploy journal: ' + JSON.stringify(ready.invocations));
});
