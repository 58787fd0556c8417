// READY means the cluster runs exactly the desired sentinel spec: a sentinel deploy whose change
// krane has not applied (krane stopped) must not answer READY, however healthy the old pods look;
// once krane is back and the new spec has rolled out, the same deploy answers READY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { KubeClient as KubeClient } from '../../src/kube/client';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';

const REGION = 'us-east-1';
const stack = await testStack({ regions: [REGION], ctrl: { settings: { sentinelTimeout: '60s' } } });
const kube = new KubeClient(stack.regions.get(REGION)!.sim.sim.kubeConfig());

async function readySentinel(): Promise<string> {
  const d = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], replicas: 1 } });
  await until(async () => (await stack.api(`/v1/deployments/${d.body.id}`)).body.status === 'ready', 20_000, 'deploy ready');
  const list = await stack.api(`/v1/sentinels?region=${REGION}`);
  return list.body.sentinels[0].id;
}

test('a cpu-only sentinel change is not READY while krane is stopped; it is once krane applied it', async () => {
  const id = await readySentinel();
  await until(async () => (await stack.db.sql<{ health: string }[]>`SELECT health FROM sentinels WHERE id = ${id}`)[0]?.health === 'healthy', 20_000, 'healthy');
  await stack.stopKrane(REGION);

  const deploy = stack.api(`/v1/sentinels/${id}/deploy`, { body: { cpuMillicores: 750 } });
  let answered: { status: number; body: any } | undefined;
  void deploy.then((r) => (answered = r));
  // Positive evidence that the deploy keeps waiting: its journal shows two convergence checks
  // that both said "not yet" (the second one a full re-check interval after the write).
  const checks = async () => {
    const list = await stack.api('/v1/invocations?target=SentinelService');
    const inv = list.body.invocations.find((i: any) => i.key === id && i.handler === 'deploy' && i.status !== 'completed');
    if (!inv) return 0;
    return (await stack.api(`/v1/invocations/${inv.id}`)).body.journal.filter((j: any) => j.name === 'check').length;
  };
  await until(async () => answered !== undefined || (await checks()) >= 2, 15_000, 'the deploy answered or re-checked');
  assert.equal(answered, undefined, `answered before krane applied anything: ${JSON.stringify(answered?.body)}`);
  const [waiting] = await stack.db.sql<{ cpuMillicores: number; deployStatus: string }[]>`SELECT cpu_millicores, deploy_status FROM sentinels WHERE id = ${id}`;
  assert.deepEqual([waiting!.cpuMillicores, waiting!.deployStatus], [750, 'progressing']);

  await stack.restartKrane(REGION);
  const r = await deploy;
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'READY', JSON.stringify(r.body));
  const dep = (await kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: SENTINEL_NAMESPACE, name: id })) as any;
  assert.equal(dep.spec.template.spec.containers[0].resources.limits.cpu, '750m');
});
