// kube-sim's HorizontalPodAutoscaler controller (issue 25): the pure rule (ceil of ready pods ×
// utilisation / target, 10% tolerance, bounds, scale-down stabilisation), then the controller
// scaling a StatefulSet through /scale, read back with the real kubectl.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeconfigYaml } from '../../src/kube-sim';
import { recommendReplicas, simulatedCpuLoad, stabilize } from '../../src/kube-sim/workloads/hpa';
import { startSim, statefulSet, waitFor, type SimFixture } from './helpers';

const KUBECTL = '/usr/bin/kubectl';

test('the recommendation: ceil(ready × utilisation / target), nothing within 10%, bounds, and a stabilised scale-down', () => {
  assert.equal(recommendReplicas({ current: 1, ready: 1, utilization: 95, target: 70 }), 2);
  assert.equal(recommendReplicas({ current: 2, ready: 2, utilization: 95, target: 70 }), 3);
  assert.equal(recommendReplicas({ current: 4, ready: 4, utilization: 75, target: 70 }), 4, 'within the tolerance');
  assert.equal(recommendReplicas({ current: 4, ready: 4, utilization: 5, target: 70 }), 1);
  assert.equal(recommendReplicas({ current: 3, ready: 0, utilization: undefined, target: 70 }), 3, 'no metrics, no change');
  assert.equal(stabilize({ current: 2, recommendation: 9, window: [], min: 1, max: 4 }), 4, 'up at once, to the max');
  assert.equal(stabilize({ current: 4, recommendation: 1, window: [4, 3], min: 1, max: 4 }), 4, 'down waits for the window');
  assert.equal(stabilize({ current: 4, recommendation: 1, window: [2, 1], min: 1, max: 4 }), 2, 'down to the highest of the window');
  assert.equal(stabilize({ current: 1, recommendation: 1, window: [], min: 2, max: 4 }), 2, 'the min is enforced');
  assert.deepEqual(['app:cpuhot-1', 'app:cpucold', 'nginx:1.27'].map(simulatedCpuLoad), [0.95, 0.05, 0.3]);
});

let f: SimFixture;
let dir: string;
before(async () => {
  f = await startSim({ readyDelayMs: 20, hpaSyncMs: 100, hpaStabilizationScale: 0.01 });
  dir = mkdtempSync(join(tmpdir(), 'kube-sim-hpa-'));
});
after(async () => {
  await f.close();
  rmSync(dir, { recursive: true, force: true });
});

function kubectl(...args: string[]): Promise<string> {
  const home = mkdtempSync(join(dir, 'home-'));
  const kubeconfig = join(home, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(f.url));
  return new Promise((resolve, reject) =>
    execFile(KUBECTL, args, { env: { PATH: process.env.PATH, HOME: home, KUBECONFIG: kubeconfig }, timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`)) : resolve(stdout))),
  );
}

test('a StatefulSet of a cpuhot image is scaled from min to max, seen by kubectl get hpa, and back to min when its load drops', async () => {
  const sts = statefulSet('hot', 'registry.local/app:cpuhot-1', 1);
  (sts.spec.template.spec.containers[0] as Record<string, unknown>).resources = { requests: { cpu: '200m' }, limits: { cpu: '200m' } };
  await f.objects.create(sts as never);
  const hpa = {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: 'hot', namespace: 'default' },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'hot' },
      minReplicas: 1,
      maxReplicas: 4,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }],
      behavior: { scaleDown: { stabilizationWindowSeconds: 60 } },
    },
  };
  const p = join(dir, 'hpa.json');
  writeFileSync(p, JSON.stringify(hpa));
  await kubectl('apply', '--server-side', '-f', p);
  const row = async () => (await kubectl('get', 'hpa', 'hot', '--no-headers')).trim().split(/\s+/);
  const seen = await waitFor('hpa at max', async () => {
    const r = await row();
    return r[6] === '4' ? r : undefined;
  }, 15_000, 50);
  // NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE (TARGETS prints as two words: `cpu: 95%/70%`)
  assert.deepEqual([seen[0], seen[1], seen[4], seen[5]], ['hot', 'StatefulSet/hot', '1', '4']);
  assert.match(seen.slice(2, 4).join(' '), /^cpu: 95%\/70%$/);
  assert.equal((await f.apps.readNamespacedStatefulSet({ name: 'hot', namespace: 'default' })).spec?.replicas, 4);
  assert.match(await kubectl('get', 'events', '--field-selector', 'reason=SuccessfulRescale'), /New size: \d/);

  f.sim.autoscalers.setLoad('default', 'hot', simulatedCpuLoad('app:cpucold'));
  await waitFor('hpa back at min', async () => (await row())[6] === '1' || undefined, 15_000, 50);
  assert.equal((await f.apps.readNamespacedStatefulSet({ name: 'hot', namespace: 'default' })).spec?.replicas, 1);
  assert.match((await row()).slice(2, 4).join(' '), /^cpu: 5%\/70%$/);
});
