// Drift of every kind an operator can cause, made with the real kubectl against kube-sim and
// healed by krane's drift watch: the scale subresource, `kubectl edit`, `kubectl set image`, a
// label removed, a patch and a server-side apply by other field managers, and changes to kinds
// without a generation (Service, ConfigMap). Each prints the time from the end of the kubectl
// run to the object back as desired (kubectl's own start-up is not counted; bench/drift.ts
// measures from the write itself).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DriftWatch } from '../../src/kube/drift';
import type { ResourceRef } from '../../src/sync/wire';
import { controller, logger, startSim, until } from './helpers';
import { deploymentState, routesState, sentinelState } from './fixtures';
import { kubectlFor } from './kubectl';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { routesObjectName } from '../../src/kube/manifests';

const { sim, api } = await startSim(20);
const ctl = controller(api);
const drift = new DriftWatch({ api, controller: ctl, logger, relistIntervalMs: 60_000 });
drift.start();
after(async () => {
  ctl.close();
  await drift.stop();
});
await until(() => drift.hasSynced);
const kubectl = kubectlFor(sim.url);

const dep = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });
const get = (apiVersion: string, kind: string, namespace: string, name: string) => api.get({ apiVersion, kind, namespace, name }) as Promise<any>;
const sts = (name: string) => get('apps/v1', 'StatefulSet', 'unkey', name);
const times: Record<string, number> = {};

/** Runs the change, then waits for `healed` and at least one more repair than before. */
async function healed(name: string, change: () => Promise<unknown>, isHealed: () => Promise<boolean>): Promise<void> {
  const repairs = ctl.stats.repaired;
  await change();
  const changedAt = Date.now();
  await until(async () => ctl.stats.repaired > repairs && (await isHealed()), 10_000);
  times[name] = Date.now() - changedAt;
}

test('a StatefulSet scaled through the scale subresource goes back to its replicas', async () => {
  await ctl.apply(dep('dep-scale'), deploymentState({ deploymentId: 'dep-scale', replicas: 2 }));
  const before = await sts('dep-scale');
  await healed('scale', () => kubectl.ok(['scale', 'statefulset', 'dep-scale', '-n', 'unkey', '--replicas=5']), async () => (await sts('dep-scale')).spec.replicas === 2);
  assert.ok((await sts('dep-scale')).metadata.generation > before.metadata.generation, 'the scale did change the object');
});

test('kubectl edit of the pod template is undone', async () => {
  await ctl.apply(dep('dep-edit'), deploymentState({ deploymentId: 'dep-edit' }));
  const grace = (await sts('dep-edit')).spec.template.spec.terminationGracePeriodSeconds;
  const editor = `sed -i -e 's/terminationGracePeriodSeconds: ${grace}$/terminationGracePeriodSeconds: 77/'`;
  await healed(
    'edit',
    async () => {
      await kubectl.ok(['edit', 'statefulset', 'dep-edit', '-n', 'unkey'], { editor });
    },
    async () => (await sts('dep-edit')).spec.template.spec.terminationGracePeriodSeconds === grace,
  );
});

test('kubectl set image is undone', async () => {
  await ctl.apply(dep('dep-image'), deploymentState({ deploymentId: 'dep-image' }));
  await healed('set-image', () => kubectl.ok(['set', 'image', 'statefulset/dep-image', 'app=evil.example/app:v9', '-n', 'unkey']), async () => (await sts('dep-image')).spec.template.spec.containers[0].image === 'registry.example/app:v1');
});

test('a label removed by hand comes back', async () => {
  await ctl.apply(dep('dep-label'), deploymentState({ deploymentId: 'dep-label' }));
  await healed('label', () => kubectl.ok(['label', 'statefulset', 'dep-label', 'unkey.com/app.id-', '-n', 'unkey']), async () => (await sts('dep-label')).metadata.labels['unkey.com/app.id'] === 'app-a');
});

test('a strategic patch by another field manager is undone', async () => {
  await ctl.apply(dep('dep-patch'), deploymentState({ deploymentId: 'dep-patch' }));
  const patch = JSON.stringify({ spec: { template: { spec: { containers: [{ name: 'app', env: [{ name: 'FOO', value: 'evil' }] }] } } } });
  await healed(
    'patch',
    () => kubectl.ok(['patch', 'statefulset', 'dep-patch', '-n', 'unkey', '--field-manager=intruder', '-p', patch]),
    async () => (await sts('dep-patch')).spec.template.spec.containers[0].env.find((e: any) => e.name === 'FOO')?.value === 'bar',
  );
});

test('a server-side apply by another manager that forces krane off a field is undone', async () => {
  await ctl.apply(dep('dep-ssa'), deploymentState({ deploymentId: 'dep-ssa', replicas: 2 }));
  const doc = JSON.stringify({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'dep-ssa', namespace: 'unkey' }, spec: { replicas: 7 } });
  await healed(
    'apply',
    () => applyFromFile(doc),
    async () => (await sts('dep-ssa')).spec.replicas === 2,
  );
});

async function applyFromFile(doc: string): Promise<void> {
  const f = join(mkdtempSync(join(tmpdir(), 'drift-ssa-')), 'sts.json');
  writeFileSync(f, doc);
  await kubectl.ok(['apply', '--server-side', '--force-conflicts', '--field-manager=intruder', '-f', f]);
}

test('a sentinel Deployment scaled by hand goes back', async () => {
  await ctl.apply({ type: 'sentinel', id: 'snt-scale', region: 'us-east-1' }, sentinelState({ sentinelId: 'snt-scale', replicas: 2 }));
  const deployment = () => get('apps/v1', 'Deployment', 'sentinel', 'snt-scale');
  await healed('scale-deployment', () => kubectl.ok(['scale', 'deployment', 'snt-scale', '-n', 'sentinel', '--replicas=0']), async () => (await deployment()).spec.replicas === 2);
});

test('kinds without a generation: a Service and a ConfigMap changed by hand are undone', async () => {
  await ctl.apply(dep('dep-svc'), deploymentState({ deploymentId: 'dep-svc' }));
  const svc = () => get('v1', 'Service', 'unkey', 'dep-svc');
  assert.equal((await svc()).spec.publishNotReadyAddresses, true);
  await healed('service', () => kubectl.ok(['patch', 'service', 'dep-svc', '-n', 'unkey', '--type=merge', '-p', '{"spec":{"publishNotReadyAddresses":false}}']), async () => (await svc()).spec.publishNotReadyAddresses === true);

  const routes = routesState();
  await ctl.apply({ type: 'environment_routes', id: routes.environmentId, region: 'us-east-1' }, routes);
  const name = routesObjectName(routes.environmentId);
  const cm = () => get('v1', 'ConfigMap', 'sentinel', name);
  const data = (await cm()).data;
  const key = Object.keys(data)[0]!;
  await healed('configmap', () => kubectl.ok(['patch', 'configmap', name, '-n', 'sentinel', '--type=merge', '-p', JSON.stringify({ data: { [key]: 'tampered' } })]), async () => (await cm()).data[key] === data[key]);
});

test('heal times', () => {
  console.log(JSON.stringify({ driftHealMs: times }));
  assert.ok(Object.keys(times).length >= 8);
});
