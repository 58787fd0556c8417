// Autoscaling end to end (issue 25): a deployment with `autoscaling` gets an HPA in its region;
// kube-sim's autoscaler scales a cpuhot image from min to max, seen by the real `kubectl get
// hpa` and in ctrl's view (krane's reports), and back down to min once its load is cpucold.
// krane never fights the autoscaler: its StatefulSet manifest leaves replicas out.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testStack, until } from '../helpers/stack';
import { kubeconfigYaml } from '../../src/kube-sim';
import { simulatedCpuLoad } from '../../src/kube-sim/workloads/hpa';
import { deploymentObjectName } from '../../src/kube/manifests';
import { WORKLOAD_NAMESPACE } from '../../src/sync/wire';
import { runCli } from '../helpers/cli';

const REGION = 'us-east-1';
// Autoscalers evaluated every 200 ms, and the 60 s scale-down window shortened to 1.2 s.
const stack = await testStack({ regions: [REGION], sim: { minReadyScale: 0.001, hpaSyncMs: 200, hpaStabilizationScale: 0.02 } });
const sim = stack.regions.get(REGION)!.sim.sim;
const dir = mkdtempSync(join(tmpdir(), 'autoscaling-e2e-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function kubectl(...args: string[]): Promise<string> {
  const home = mkdtempSync(join(dir, 'home-'));
  const kubeconfig = join(home, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(sim.url));
  return new Promise((resolve, reject) =>
    execFile('/usr/bin/kubectl', args, { env: { PATH: process.env.PATH, HOME: home, KUBECONFIG: kubeconfig }, timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`)) : resolve(stdout))),
  );
}

test('a cpuhot image scales from min to max (kubectl get hpa and the API agree), and back to min when cold; replicas and autoscaling together are a 400', async () => {
  const both = await stack.api('/v1/deployments', { body: { image: 'registry.local/app:cpuhot-1', regions: [REGION], replicas: 2, autoscaling: { minReplicas: 1, maxReplicas: 3 } } });
  assert.equal(both.status, 400);
  assert.deepEqual(both.body.error.details.map((d: any) => d.field), ['replicas']);
  const badBounds = await stack.api('/v1/deployments', { body: { image: 'registry.local/app:cpuhot-1', regions: [REGION], autoscaling: { minReplicas: 4, maxReplicas: 3 } } });
  assert.equal(badBounds.status, 400);

  const created = await stack.api('/v1/deployments', { body: { image: 'registry.local/app:cpuhot-1', regions: [REGION], cpuMillicores: 200, autoscaling: { minReplicas: 1, maxReplicas: 3 } } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.id;
  const name = deploymentObjectName(id);
  const view = async () => (await stack.api(`/v1/deployments/${id}`)).body;
  const ready = await until(async () => {
    const d = await view();
    return ['ready', 'failed'].includes(d.status) ? d : undefined;
  }, 30_000, 'ready');
  assert.equal(ready.status, 'ready', ready.error);
  assert.deepEqual(ready.autoscaling, { minReplicas: 1, maxReplicas: 3, cpuUtilization: 70 });

  // kubectl sees the autoscaler reach its maximum: NAME REFERENCE TARGETS(2 words) MINPODS MAXPODS REPLICAS AGE.
  const row = async () => (await kubectl('get', 'hpa', name, '-n', WORKLOAD_NAMESPACE, '--no-headers')).trim().split(/\s+/);
  const hot = await until(async () => {
    const r = await row();
    return r[6] === '3' ? r : undefined;
  }, 20_000, 'kubectl get hpa at 3 replicas');
  assert.deepEqual([hot[1], `${hot[2]} ${hot[3]}`, hot[4], hot[5]], [`StatefulSet/${name}`, 'cpu: 95%/70%', '1', '3']);
  // ctrl's view, from krane's reports: three instances running and the autoscaler at max.
  const atMax = await until(async () => {
    const d = await view();
    const t = d.topology.find((x: any) => x.region === REGION);
    return t?.autoscaling?.current === 3 && t.running === 3 ? t : undefined;
  }, 20_000, 'API shows 3 of 3');
  assert.deepEqual(atMax.autoscaling, { min: 1, max: 3, current: 3, desired: 3, cpuUtilization: 95 });
  const cli = await runCli(['deployments', 'get', id], { env: { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken } });
  assert.match(cli.stdout, /autoscaling:\s+1-3 replicas at 70% CPU; us-east-1 3 \(wants 3, CPU 95%\)/);
  // krane's own re-apply does not take the replicas back: its manifest has none.
  await stack.restartKrane(REGION);
  const sts = async () => JSON.parse(await kubectl('get', 'statefulset', name, '-n', WORKLOAD_NAMESPACE, '-o', 'json'));
  assert.equal((await sts()).spec.replicas, 3);

  sim.autoscalers.setLoad(WORKLOAD_NAMESPACE, name, simulatedCpuLoad('app:cpucold'));
  await until(async () => (await row())[6] === '1' || undefined, 20_000, 'kubectl get hpa back at 1 replica');
  const cold = await until(async () => {
    const t = (await view()).topology.find((x: any) => x.region === REGION);
    return t?.autoscaling?.current === 1 && t.autoscaling.cpuUtilization === 5 ? t : undefined;
  }, 20_000, 'API shows 1');
  assert.equal(cold.autoscaling.desired, 1);
  assert.equal((await sts()).spec.replicas, 1);
});
