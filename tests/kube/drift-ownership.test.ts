// Which objects are krane's (issue 33, defect 8). The managed-by label is for people and
// selectors, and anyone can remove it (`kubectl label sts X app.kubernetes.io/managed-by-`);
// what krane applied is also recorded by the API server itself, as krane's field manager entry
// in managedFields. An object krane applied stays krane's without its label: the label is put
// back, a later apply does not refuse it as someone else's, and stop and GC still remove it and
// its pods. An object krane never applied is still refused and never deleted. Edits are made
// with the real kubectl.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DriftWatch } from '../../src/kube/drift';
import type { ResourceRef } from '../../src/sync/wire';
import { controller, logger, startSim, until } from './helpers';
import { deploymentState } from './fixtures';
import { kubectlFor } from './kubectl';

const { sim, api } = await startSim(20);
const kubectl = kubectlFor(sim.url);
const MANAGED_BY = 'app.kubernetes.io/managed-by';

const ref = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });
const sts = (name: string) => api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name }) as Promise<any>;
const pods = async (id: string) => (await api.list('v1', 'Pod', 'unkey', `unkey.com/deployment.id=${id}`)).items;
const unlabel = (name: string) => kubectl.ok(['label', 'statefulset', name, '-n', 'unkey', `${MANAGED_BY}-`]);

test('a managed-by label removed by hand is put back by the drift watch', async () => {
  const ctl = controller(api);
  const drift = new DriftWatch({ api, controller: ctl, logger, relistIntervalMs: 60_000 });
  drift.start();
  after(async () => {
    ctl.close();
    await drift.stop();
  });
  await until(() => drift.hasSynced);
  await ctl.apply(ref('dep-own-watch'), deploymentState({ deploymentId: 'dep-own-watch', replicas: 1 }));
  const repaired = ctl.drift.snapshot().repaired;
  await unlabel('dep-own-watch');
  await until(async () => (await sts('dep-own-watch')).metadata.labels[MANAGED_BY] === 'krane', 10_000);
  assert.equal(ctl.drift.snapshot().repaired, repaired + 1, 'counted as one repair');
});

// The controllers below run without a drift watch (a krane that was down while the label went):
// nothing repairs the label before the apply, stop or GC under test.
test('a later apply of an object that lost its label takes it back instead of failing for good', async () => {
  const ctl = controller(api);
  after(() => ctl.close());
  await ctl.apply(ref('dep-own-apply'), deploymentState({ deploymentId: 'dep-own-apply', replicas: 1 }));
  await unlabel('dep-own-apply');
  // A krane started afterwards knows nothing of it but what the cluster says.
  const restarted = controller(api);
  after(() => restarted.close());
  await restarted.apply(ref('dep-own-apply'), deploymentState({ deploymentId: 'dep-own-apply', replicas: 1 }));
  assert.equal((await sts('dep-own-apply')).metadata.labels[MANAGED_BY], 'krane');
});

test('stop removes a StatefulSet that lost its label, and its pods', async () => {
  const ctl = controller(api);
  after(() => ctl.close());
  await ctl.apply(ref('dep-own-stop'), deploymentState({ deploymentId: 'dep-own-stop', replicas: 2 }));
  await until(async () => (await pods('dep-own-stop')).length === 2);
  await unlabel('dep-own-stop');
  const restarted = controller(api);
  after(() => restarted.close());
  await restarted.delete(ref('dep-own-stop'));
  assert.equal(await sts('dep-own-stop'), undefined, 'the StatefulSet is gone');
  await until(async () => (await pods('dep-own-stop')).length === 0, 10_000);
});

test('GC removes a StatefulSet that lost its label, and its pods', async () => {
  const ctl = controller(api, 60_000, { gcMaxFraction: 1 });
  after(() => ctl.close());
  await ctl.apply(ref('dep-own-gc'), deploymentState({ deploymentId: 'dep-own-gc', replicas: 1 }));
  await until(async () => (await pods('dep-own-gc')).length === 1);
  await unlabel('dep-own-gc');
  const restarted = controller(api, 60_000, { gcMaxFraction: 1 });
  after(() => restarted.close());
  // Everything else of this file stays desired: only dep-own-gc is no longer wanted.
  const keep = ['dep-own-watch', 'dep-own-apply', 'dep-own-foreign'].map((id) => `deployment_topology/${id}`);
  await restarted.gc(new Set(keep));
  assert.equal(await sts('dep-own-gc'), undefined, 'the StatefulSet is gone');
  await until(async () => (await pods('dep-own-gc')).length === 0, 10_000);
});

test('an object of the same name that krane never applied is refused and left alone', async () => {
  await kubectl.ok(['create', 'service', 'clusterip', 'dep-own-foreign', '-n', 'unkey', '--tcp=80:80']);
  const ctl = controller(api, 60_000, { gcMaxFraction: 1 });
  after(() => ctl.close());
  await assert.rejects(ctl.apply(ref('dep-own-foreign'), deploymentState({ deploymentId: 'dep-own-foreign', replicas: 1 })), (err: any) => err.code === 'ERR_KUBE_UNMANAGED_CONFLICT');
  await ctl.delete(ref('dep-own-foreign'));
  await ctl.gc(new Set());
  const svc = await api.get({ apiVersion: 'v1', kind: 'Service', namespace: 'unkey', name: 'dep-own-foreign' });
  assert.ok(svc, 'the foreign Service is still there');
  assert.equal(svc.metadata?.labels?.[MANAGED_BY], undefined, 'and not labelled as krane\'s');
});
