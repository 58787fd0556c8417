import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { PatchStrategy, type V1Pod } from '@kubernetes/client-node';
import { deployment, recordWatch, startSim, statefulSet, waitFor, type SimFixture } from './helpers';

// A ready delay long enough to observe the Pending phase, short enough to keep the file fast.
const READY_DELAY = 30;

let f: SimFixture;
before(async () => {
  f = await startSim({ readyDelayMs: READY_DELAY });
});
after(async () => {
  await f.close();
});

const apply = (obj: unknown) => f.objects.patch(structuredClone(obj) as any, undefined, undefined, 'krane', true, PatchStrategy.ServerSideApply);
const pods = async (selector: string) => (await f.core.listNamespacedPod({ namespace: 'default', labelSelector: selector })).items;
const ready = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const waiting = (p: V1Pod) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason;

test('a pod is Pending, then Running and Ready after the ready delay', async () => {
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/pods', { fieldSelector: 'metadata.name=solo', resourceVersion: f.sim.api.currentResourceVersion });
  const t0 = Date.now();
  let done: V1Pod;
  try {
    const created = await f.core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'solo', labels: { app: 'solo' } }, spec: { containers: [{ name: 'app', image: 'app:v1' }] } } });
    assert.equal(created.status?.phase, 'Pending');
    done = await waitFor('solo ready', async () => {
      const p = await f.core.readNamespacedPod({ name: 'solo', namespace: 'default' });
      return ready(p) ? p : undefined;
    });
    assert.ok(Date.now() - t0 >= READY_DELAY);
    await waitFor('ready event', () => watch.events.some((e) => ready(e.object)));
    // Pending, bound to a node by the scheduler (spec.nodeName and PodScheduled, as the binding
    // sets them), the container being created, then Running and Ready.
    const phases = watch.events.map((e) => `${e.object.status?.phase}${ready(e.object) ? '+ready' : ''}${waiting(e.object) ? ':' + waiting(e.object) : ''}`);
    assert.deepEqual(phases, ['Pending', 'Pending', 'Pending:ContainerCreating', 'Running+ready']);
    assert.equal(watch.events[0]!.object.spec.nodeName, undefined);
    assert.match(watch.events[1]!.object.spec.nodeName, /^kube-sim-node-\d$/);
    assert.equal(watch.events[1]!.object.status.conditions.find((c: { type: string }) => c.type === 'PodScheduled')?.status, 'True');
  } finally {
    watch.stop();
  }
  assert.equal(done.status?.phase, 'Running');
  const cs = done.status!.containerStatuses![0]!;
  assert.equal(cs.image, 'app:v1');
  assert.equal(cs.ready, true);
  assert.equal(cs.restartCount, 0);
  assert.ok(cs.state?.running?.startedAt);
  assert.match(done.status?.podIP ?? '', /^10\.244\./);
  assert.match(done.status?.hostIP ?? '', /^10\.0\.0\./);
});

test('StatefulSet: stable ordered names, ordered start, status, scale down and rolling update', async () => {
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/pods', { labelSelector: 'app=ordered', resourceVersion: f.sim.api.currentResourceVersion });
  try {
    await apply(statefulSet('ordered', 'app:v1', 3));
    const sts = await waitFor('3 ready', async () => {
      const s = await f.apps.readNamespacedStatefulSet({ name: 'ordered', namespace: 'default' });
      return s.status?.readyReplicas === 3 ? s : undefined;
    });
    assert.deepEqual((await pods('app=ordered')).map((p) => p.metadata!.name).sort(), ['ordered-0', 'ordered-1', 'ordered-2']);
    assert.deepEqual(
      { replicas: sts.status?.replicas, current: sts.status?.currentReplicas, updated: sts.status?.updatedReplicas, available: sts.status?.availableReplicas, observed: sts.status?.observedGeneration },
      { replicas: 3, current: 3, updated: 3, available: 3, observed: 1 },
    );
    // OrderedReady: each pod is created only once the one before it is Ready.
    const added = watch.events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata.name);
    assert.deepEqual(added, ['ordered-0', 'ordered-1', 'ordered-2']);
    const readyAt = (name: string) => watch.events.findIndex((e) => e.object.metadata.name === name && ready(e.object));
    const addedAt = (name: string) => watch.events.findIndex((e) => e.type === 'ADDED' && e.object.metadata.name === name);
    assert.ok(readyAt('ordered-0') < addedAt('ordered-1'));
    assert.ok(readyAt('ordered-1') < addedAt('ordered-2'));
    const p0 = (await pods('app=ordered')).find((p) => p.metadata?.name === 'ordered-0')!;
    assert.equal(p0.metadata?.ownerReferences?.[0]?.kind, 'StatefulSet');
    assert.equal(p0.metadata?.ownerReferences?.[0]?.controller, true);
    assert.equal(p0.spec?.hostname, 'ordered-0');

    // Rolling update keeps the names and ends with every pod on the new template.
    await apply(statefulSet('ordered', 'app:v2', 3));
    const updated = await waitFor('rolled', async () => {
      const s = await f.apps.readNamespacedStatefulSet({ name: 'ordered', namespace: 'default' });
      return s.status?.updatedReplicas === 3 && s.status.readyReplicas === 3 && s.status.currentRevision === s.status.updateRevision ? s : undefined;
    });
    assert.equal(updated.status?.observedGeneration, 2);
    const after = await pods('app=ordered');
    assert.deepEqual(after.map((p) => p.metadata!.name).sort(), ['ordered-0', 'ordered-1', 'ordered-2']);
    assertEvery(after, (p) => p.spec?.containers[0]?.image === 'app:v2');
    // Highest ordinal first.
    const deletions = watch.events.filter((e) => e.type === 'DELETED').map((e) => e.object.metadata.name);
    assert.deepEqual(deletions, ['ordered-2', 'ordered-1', 'ordered-0']);

    await apply(statefulSet('ordered', 'app:v2', 1));
    await waitFor('scaled down', async () => (await pods('app=ordered')).length === 1);
    assert.equal((await pods('app=ordered'))[0]!.metadata?.name, 'ordered-0');
    const s1 = await waitFor('status 1', async () => {
      const s = await f.apps.readNamespacedStatefulSet({ name: 'ordered', namespace: 'default' });
      return s.status?.replicas === 1 ? s : undefined;
    });
    assert.equal(s1.status?.readyReplicas, 1);
  } finally {
    watch.stop();
  }
});

test('Deployment: rolling update surges new pods before old ones go and never drops below the minimum', async () => {
  const strategy = { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };
  await apply(deployment('roll', 'app:v1', 3, strategy));
  await waitFor('3 available', async () => (await f.apps.readNamespacedDeployment({ name: 'roll', namespace: 'default' })).status?.availableReplicas === 3);
  const initial = await pods('app=roll');
  assert.equal(initial.length, 3);
  assertEvery(initial, (p) => p.metadata?.labels?.['pod-template-hash'] && p.metadata.ownerReferences?.[0]?.kind === 'Deployment');

  // Replay the pod events from here and check the invariants after every event.
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/pods', { labelSelector: 'app=roll', resourceVersion: f.sim.api.currentResourceVersion });
  try {
    await apply(deployment('roll', 'app:v2', 3, strategy));
    const done = await waitFor('rolled out', async () => {
      const d = await f.apps.readNamespacedDeployment({ name: 'roll', namespace: 'default' });
      const s = d.status;
      return s?.observedGeneration === 2 && s.updatedReplicas === 3 && s.availableReplicas === 3 && s.replicas === 3 ? d : undefined;
    });
    const state = new Map<string, V1Pod>(initial.map((p) => [p.metadata!.name!, p]));
    let maxPods = 0;
    let minReady = Infinity;
    for (const e of watch.events) {
      if (e.type === 'DELETED') state.delete(e.object.metadata.name);
      else state.set(e.object.metadata.name, e.object);
      maxPods = Math.max(maxPods, state.size);
      minReady = Math.min(minReady, [...state.values()].filter(ready).length);
    }
    assert.equal(maxPods, 4, 'maxSurge 1 allows exactly one extra pod');
    assert.equal(minReady, 3, 'maxUnavailable 0 keeps three ready pods throughout');
    const firstAdd = watch.events.findIndex((e) => e.type === 'ADDED');
    const firstDelete = watch.events.findIndex((e) => e.type === 'DELETED');
    assert.ok(firstAdd >= 0 && firstAdd < firstDelete, 'a new pod comes before an old one goes');
    const final = await pods('app=roll');
    assert.equal(final.length, 3);
    assertEvery(final, (p) => p.spec?.containers[0]?.image === 'app:v2');
    const conds = Object.fromEntries((done.status?.conditions ?? []).map((c) => [c.type, c]));
    assert.equal(conds.Available?.status, 'True');
    assert.equal(conds.Progressing?.reason, 'NewReplicaSetAvailable');
    assert.equal(done.status?.unavailableReplicas, undefined);
  } finally {
    watch.stop();
  }
  await f.apps.deleteNamespacedDeployment({ name: 'roll', namespace: 'default' });
  assert.equal((await pods('app=roll')).length, 0, 'deleting the Deployment deletes its pods');
});

test('fault crash: CrashLoopBackOff with a growing restartCount, never ready', async () => {
  await apply(statefulSet('crashy', 'registry.local/app:crash-1', 1));
  const first = await waitFor('crash loop', async () => (await pods('app=crashy')).find((p) => waiting(p) === 'CrashLoopBackOff'));
  const cs = first.status!.containerStatuses![0]!;
  assert.equal(cs.ready, false);
  assert.equal(cs.lastState?.terminated?.reason, 'Error');
  assert.equal(ready(first), false);
  const n = cs.restartCount;
  await waitFor('more restarts', async () => ((await pods('app=crashy'))[0]?.status?.containerStatuses?.[0]?.restartCount ?? 0) > n);
  const sts = await f.apps.readNamespacedStatefulSet({ name: 'crashy', namespace: 'default' });
  assert.equal(sts.status?.readyReplicas ?? 0, 0);
});

test('fault pullfail: ErrImagePull, then ImagePullBackOff, stays Pending', async () => {
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/pods', { labelSelector: 'app=nopull', resourceVersion: f.sim.api.currentResourceVersion });
  try {
    await apply(statefulSet('nopull', 'app:pullfail', 1));
    const backoff = await waitFor('backoff', async () => (await pods('app=nopull')).find((p) => waiting(p) === 'ImagePullBackOff'));
    assert.equal(backoff.status?.phase, 'Pending');
    const reasons = watch.events.map((e) => waiting(e.object)).filter(Boolean);
    assert.ok(reasons.indexOf('ErrImagePull') >= 0 && reasons.indexOf('ErrImagePull') < reasons.indexOf('ImagePullBackOff'));
  } finally {
    watch.stop();
  }
});

test('fault slow: ten times the ready delay', async () => {
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/pods', { labelSelector: 'app in (fast,sluggish)', resourceVersion: f.sim.api.currentResourceVersion });
  try {
    const t0 = Date.now();
    await apply(statefulSet('fast', 'app:v1', 1));
    await apply(statefulSet('sluggish', 'app:slow', 1));
    await waitFor('slow ready', async () => (await pods('app=sluggish')).some(ready), 5_000);
    // Timers never fire early, so this lower bound holds however loaded the machine is.
    assert.ok(Date.now() - t0 >= READY_DELAY * 10);
    await waitFor('slow ready event', () => watch.events.some((e) => e.object.metadata.labels.app === 'sluggish' && ready(e.object)));
    const readyOrder = watch.events.filter((e) => ready(e.object)).map((e) => e.object.metadata.labels.app);
    assert.deepEqual(readyOrder, ['fast', 'sluggish']);
  } finally {
    watch.stop();
  }
});

test('fault oom: OOMKilled, then CrashLoopBackOff with OOMKilled as the last state', async () => {
  // The terminated state lasts only until the restart's back-off begins: a poll of the pods missed
  // it on a loaded machine (CI), while the watch records every state the pod passed through.
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/pods', { labelSelector: 'app=hungry', resourceVersion: f.sim.api.currentResourceVersion });
  try {
    await apply(statefulSet('hungry', 'app:oom', 1));
    const looping = await waitFor('loop', async () => (await pods('app=hungry')).find((p) => waiting(p) === 'CrashLoopBackOff'));
    assert.equal(looping.status?.containerStatuses?.[0]?.lastState?.terminated?.reason, 'OOMKilled');
    assert.ok((looping.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1);
    await waitFor('the loop seen by the watch', () => watch.events.some((e) => waiting(e.object) === 'CrashLoopBackOff'));
    const states = watch.events.map((e) => e.object.status?.containerStatuses?.[0]?.state?.terminated?.reason ?? waiting(e.object)).filter(Boolean);
    assert.ok(states.indexOf('OOMKilled') >= 0 && states.indexOf('OOMKilled') < states.indexOf('CrashLoopBackOff'), `states seen: ${states.join(', ')}`);
  } finally {
    watch.stop();
  }
});

test('admin fault endpoint breaks and heals a workload by namespace/name', async () => {
  await apply(statefulSet('target', 'app:v1', 2));
  await waitFor('ready', async () => (await f.apps.readNamespacedStatefulSet({ name: 'target', namespace: 'default' })).status?.readyReplicas === 2);
  const res = await f.fetch(`${f.url}/_sim/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ namespace: 'default', name: 'target', fault: 'crash' }) });
  assert.equal(res.status, 200);
  assert.deepEqual(((await res.json()) as { pods: string[] }).pods.sort(), ['target-0', 'target-1']);
  await waitFor('all crashing', async () => (await pods('app=target')).every((p) => waiting(p) === 'CrashLoopBackOff'));
  await waitFor('sts not ready', async () => ((await f.apps.readNamespacedStatefulSet({ name: 'target', namespace: 'default' })).status?.readyReplicas ?? 0) === 0);
  const listed = (await (await f.fetch(`${f.url}/_sim/faults`)).json()) as { faults: unknown[] };
  assert.deepEqual(listed.faults, [{ namespace: 'default', name: 'target', fault: 'crash' }]);

  await f.fetch(`${f.url}/_sim/faults`, { method: 'POST', body: JSON.stringify({ namespace: 'default', name: 'target', fault: 'none' }) });
  await waitFor('healed', async () => (await f.apps.readNamespacedStatefulSet({ name: 'target', namespace: 'default' })).status?.readyReplicas === 2);

  // A single pod can be targeted too.
  await f.fetch(`${f.url}/_sim/faults`, { method: 'POST', body: JSON.stringify({ namespace: 'default', name: 'target-1', fault: 'pullfail' }) });
  await waitFor('one pod broken', async () => {
    const ps = await pods('app=target');
    return ps.find((p) => p.metadata?.name === 'target-1' && waiting(p) === 'ImagePullBackOff') && ps.find((p) => p.metadata?.name === 'target-0' && ready(p));
  });
  const bad = await f.fetch(`${f.url}/_sim/faults`, { method: 'POST', body: JSON.stringify({ namespace: 'default', name: 'x', fault: 'explode' }) });
  assert.equal(bad.status, 400);
});

test('Deployment: scale down removes pods; Recreate replaces all old pods before new ones start', async () => {
  await apply(deployment('recreate', 'app:v1', 3, { type: 'Recreate' }));
  await waitFor('3 ready', async () => (await f.apps.readNamespacedDeployment({ name: 'recreate', namespace: 'default' })).status?.readyReplicas === 3);
  await apply(deployment('recreate', 'app:v1', 1, { type: 'Recreate' }));
  await waitFor('scaled to 1', async () => (await pods('app=recreate')).length === 1);

  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/pods', { labelSelector: 'app=recreate', resourceVersion: f.sim.api.currentResourceVersion });
  try {
    await apply(deployment('recreate', 'app:v2', 2, { type: 'Recreate' }));
    await waitFor('recreated', async () => {
      const d = await f.apps.readNamespacedDeployment({ name: 'recreate', namespace: 'default' });
      return d.status?.updatedReplicas === 2 && d.status.readyReplicas === 2 && d.status.replicas === 2;
    });
    const firstAdd = watch.events.findIndex((e) => e.type === 'ADDED');
    const lastDelete = watch.events.map((e) => e.type).lastIndexOf('DELETED');
    assert.ok(lastDelete >= 0 && lastDelete < firstAdd, 'every old pod is gone before a new one is created');
    assertEvery((await pods('app=recreate')), (p) => p.spec?.containers[0]?.image === 'app:v2');
  } finally {
    watch.stop();
  }
});

test('Deployment: a rollout stuck on a crashing image exceeds its progress deadline; old pods keep serving', async () => {
  // progressDeadlineSeconds 600 × 0.0005 = 300 ms.
  const g = await startSim({ readyDelayMs: 5, progressDeadlineScale: 0.0005 });
  try {
    const strategy = { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };
    const applyG = (o: unknown) => g.objects.patch(structuredClone(o) as any, undefined, undefined, 'krane', true, PatchStrategy.ServerSideApply);
    await applyG(deployment('stuck', 'app:v1', 2, strategy));
    await waitFor('available', async () => (await g.apps.readNamespacedDeployment({ name: 'stuck', namespace: 'default' })).status?.availableReplicas === 2);
    const watch = await recordWatch(g.kc, '/apis/apps/v1/namespaces/default/deployments', { fieldSelector: 'metadata.name=stuck', resourceVersion: g.sim.api.currentResourceVersion });
    let d;
    try {
      await applyG(deployment('stuck', 'app:crash', 2, strategy));
      d = await waitFor('deadline exceeded', async () => {
        const x = await g.apps.readNamespacedDeployment({ name: 'stuck', namespace: 'default' });
        const c = x.status?.conditions?.find((c) => c.type === 'Progressing');
        return c?.reason === 'ProgressDeadlineExceeded' ? x : undefined;
      });
      await waitFor('deadline event', () => watch.events.some((e) => e.object.status?.conditions?.some((c: any) => c.reason === 'ProgressDeadlineExceeded')));
      // The rollout was first reported as progressing, and only then as timed out.
      const reasons = watch.events.map((e) => e.object.status?.conditions?.find((c: any) => c.type === 'Progressing')?.reason);
      assert.ok(reasons.indexOf('ReplicaSetUpdated') >= 0 && reasons.indexOf('ReplicaSetUpdated') < reasons.indexOf('ProgressDeadlineExceeded'));
    } finally {
      watch.stop();
    }
    assert.equal(d.status?.conditions?.find((c) => c.type === 'Progressing')?.status, 'False');
    assert.equal(d.status?.availableReplicas, 2, 'maxUnavailable 0 keeps both old pods');
    assert.equal(d.status?.updatedReplicas, 1, 'only the surge pod runs the new template');
  } finally {
    await g.close();
  }
});
