import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import type { V1Pod } from '@kubernetes/client-node';
import { podState, instanceReport, InstanceStatusWatcher, SentinelStatusWatcher } from '../../src/kube/status';
import { StatusReporter } from '../../src/sync/reporter';
import type { InstanceReport, ResourceRef, SentinelStatus, StatusSink } from '../../src/sync/wire';
import { controller, fakeCtrl, logger, startSim, until } from './helpers';
import { deploymentState, sentinelState } from './fixtures';

const pod = (status: V1Pod['status'], extra: Partial<V1Pod> = {}): V1Pod => ({
  metadata: { name: 'dep-a-0', namespace: 'unkey', labels: { 'unkey.com/deployment.id': 'dep-a' } },
  spec: { containers: [{ name: 'app', image: 'x', resources: { limits: { cpu: '250m', memory: '1Gi' } } }], subdomain: 'dep-a' },
  status,
  ...extra,
});
const cs = (state: object, lastState: object = {}) => ({ name: 'app', image: 'x', imageID: '', ready: false, restartCount: 1, state, lastState });

test('pod state derivation names the kubelet reason', () => {
  assert.deepEqual(podState(pod({ phase: 'Pending', containerStatuses: [cs({ waiting: { reason: 'ContainerCreating' } })] })), { status: 'pending', reason: 'ContainerCreating' });
  assert.deepEqual(podState(pod({ phase: 'Running', containerStatuses: [cs({ waiting: { reason: 'CrashLoopBackOff' } })] })), { status: 'failed', reason: 'CrashLoopBackOff' });
  assert.deepEqual(
    podState(pod({ phase: 'Running', containerStatuses: [cs({ waiting: { reason: 'CrashLoopBackOff' } }, { terminated: { reason: 'OOMKilled', exitCode: 137 } })] })),
    { status: 'failed', reason: 'OOMKilled' },
  );
  assert.deepEqual(podState(pod({ phase: 'Pending', containerStatuses: [cs({ waiting: { reason: 'ImagePullBackOff' } })] })), { status: 'failed', reason: 'ImagePullBackOff' });
  assert.deepEqual(podState(pod({ phase: 'Pending', containerStatuses: [cs({ waiting: { reason: 'ErrImagePull' } })] })), { status: 'failed', reason: 'ErrImagePull' });
  assert.deepEqual(podState(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] })), { status: 'running', reason: null });
  assert.deepEqual(podState(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] })), { status: 'pending', reason: 'NotReady' });
  assert.deepEqual(podState(pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] })), { status: 'pending', reason: 'Unschedulable' });
  const r = instanceReport(pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }))!;
  assert.equal(r.address, 'dep-a-0.dep-a.unkey.svc.cluster.local');
  assert.equal(r.cpuMillicores, 250);
  assert.equal(r.memoryMib, 1024);
});

test('seed 001\'s creating: a pod scheduled whose container is not running yet; unscheduled stays pending', () => {
  const onNode = { spec: { ...pod({}).spec!, nodeName: 'node-1' } };
  assert.deepEqual(podState(pod({ phase: 'Pending', containerStatuses: [cs({ waiting: { reason: 'ContainerCreating' } })] }, onNode)), { status: 'creating', reason: 'ContainerCreating' });
  assert.deepEqual(podState(pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] })), { status: 'creating', reason: 'Pending' });
  // Failures still win, and a running container that is not Ready yet is not `creating`.
  assert.deepEqual(podState(pod({ phase: 'Pending', containerStatuses: [cs({ waiting: { reason: 'ErrImagePull' } })] }, onNode)), { status: 'failed', reason: 'ErrImagePull' });
  assert.deepEqual(podState(pod({ phase: 'Running', containerStatuses: [cs({ running: {} })], conditions: [{ type: 'Ready', status: 'False' }] }, onNode)), { status: 'pending', reason: 'NotReady' });
  assert.deepEqual(podState(pod({ phase: 'Running', containerStatuses: [cs({ running: {} })], conditions: [{ type: 'Ready', status: 'True' }] }, onNode)), { status: 'running', reason: null });
  assert.deepEqual(podState(pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] })), { status: 'pending', reason: 'Unschedulable' });
});

test('seed 001\'s "Failed: resource limits": a pod no node has room for fails with the scheduler\'s words; other unschedulable pods wait', () => {
  const cpu = '0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod..';
  const memory = '0/3 nodes are available: 1 Insufficient cpu, 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod..';
  const taint = '0/3 nodes are available: 3 node(s) had untolerated taint {node-class: sentinel}. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..';
  const unscheduled = (message: string) => pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }] });
  const cases: [string, V1Pod, { status: string; reason: string | null }][] = [
    ['insufficient cpu', unscheduled(cpu), { status: 'failed', reason: `resource limits: ${cpu}` }],
    ['insufficient memory', unscheduled(memory), { status: 'failed', reason: `resource limits: ${memory}` }],
    ['an untolerated taint: another node may come', unscheduled(taint), { status: 'pending', reason: 'Unschedulable' }],
    ['no message', pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }), { status: 'pending', reason: 'Unschedulable' }],
  ];
  for (const [name, p, want] of cases) assert.deepEqual(podState(p), want, name);
});

const { sim, api } = await startSim(50);
const ref = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });

test('a crash-looping image reaches ctrl as failed with its reason, driven by the pod watch (no relist)', async () => {
  const ctrl = await fakeCtrl();
  const reporter = new StatusReporter({ controlPlaneUrl: ctrl.url, token: 't', region: 'us-east-1', logger });
  // No relist for an hour: whatever reaches ctrl below came from the pod watch's events. (Its
  // latency is not asserted: a time bound here would test the machine.)
  const watcher = new InstanceStatusWatcher({ api, namespace: 'unkey', sink: reporter, logger, relistIntervalMs: 3_600_000 });
  watcher.start();
  try {
    await until(() => watcher.reflector.hasSynced);
    const ctl = controller(api);
    await ctl.apply(ref('dep-crash'), deploymentState({ deploymentId: 'dep-crash', image: 'registry.example/app:crash', replicas: 1 }));
    await ctl.apply(ref('dep-pull'), deploymentState({ deploymentId: 'dep-pull', image: 'registry.example/app:pullfail', replicas: 1 }));
    await ctl.apply(ref('dep-ok'), deploymentState({ deploymentId: 'dep-ok', replicas: 2 }));
    // The pod itself shows the failure (watched through the API independently), then ctrl hears it.
    await until(async () => {
      const p = (await api.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'unkey', name: 'dep-crash-0' })) as V1Pod | undefined;
      return p && podState(p).status === 'failed';
    }, { what: 'dep-crash-0 failed in the cluster' });
    await until(() => ctrl.reports.flatMap((r) => r.body.instances ?? []).find((i: InstanceReport) => i.podName === 'dep-crash-0' && i.status === 'failed'), {
      what: 'dep-crash-0 reported failed',
      show: () => ctrl.reports.flatMap((r) => (r.body.instances ?? []).map((i: InstanceReport) => `${i.podName} ${i.status}`)),
    });
    const latest = (pod: string) => until(() => {
      const all = ctrl.reports.flatMap((r) => r.body.instances ?? []).filter((i: InstanceReport) => i.podName === pod);
      return all.length ? (all.at(-1) as InstanceReport) : undefined;
    });
    await until(async () => (await latest('dep-crash-0')).reason === 'CrashLoopBackOff');
    await until(async () => ['ErrImagePull', 'ImagePullBackOff'].includes((await latest('dep-pull-0')).reason ?? ''));
    await until(async () => (await latest('dep-ok-1')).status === 'running');
    const ok = await latest('dep-ok-0');
    assert.equal(ok.address, 'dep-ok-0.dep-ok.unkey.svc.cluster.local');
    assert.equal(ok.cpuMillicores, 250);
    // deleting the deployment reports its pods deleted
    await ctl.delete(ref('dep-ok'));
    await until(async () => (await latest('dep-ok-0')).deleted && (await latest('dep-ok-1')).deleted);
  } finally {
    await watcher.stop();
    await reporter.close();
  }
});

test('the pod watch survives an expired resourceVersion (410) by relisting, and catches up', async () => {
  const seen = new Map<string, InstanceReport>();
  const sink: StatusSink = { instance: (r) => void seen.set(r.podName, r), sentinel: () => {}, apply: () => {}, gc: () => {} };
  const watcher = new InstanceStatusWatcher({ api, namespace: 'unkey', sink, logger, relistIntervalMs: 60_000, minBackoffMs: 10 });
  watcher.start();
  try {
    await until(() => watcher.reflector.hasSynced && watcher.reflector.watching);
    const lists = watcher.reflector.counters.lists;
    // history moves on past the watch's resourceVersion, then is compacted away
    // (a pod event in a namespace this watch does not cover, so the watch never sees it)
    await api.objects.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'bump', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x' }] } } as any);
    sim.compact();
    watcher.reflector.reconnect();
    const ctl = controller(api);
    await ctl.apply(ref('dep-410'), deploymentState({ deploymentId: 'dep-410', replicas: 1 }));
    await until(() => seen.get('dep-410-0')?.status === 'running');
    assert.ok(watcher.reflector.counters.gone >= 1, JSON.stringify(watcher.reflector.counters));
    assert.ok(watcher.reflector.counters.lists > lists);
  } finally {
    await watcher.stop();
  }
});

test('resend reports a deployment\'s pods again though nothing changed (krane calls it after applying the topology)', async () => {
  const seen: InstanceReport[] = [];
  const sink: StatusSink = { instance: (r) => void seen.push(r), sentinel: () => {}, apply: () => {}, gc: () => {} };
  const watcher = new InstanceStatusWatcher({ api, namespace: 'unkey', sink, logger, relistIntervalMs: 60_000, minBackoffMs: 10 });
  watcher.start();
  try {
    const ctl = controller(api);
    await ctl.apply(ref('dep-again'), deploymentState({ deploymentId: 'dep-again', replicas: 2 }));
    await ctl.apply(ref('dep-other'), deploymentState({ deploymentId: 'dep-other', replicas: 1 }));
    const running = (id: string) => seen.filter((r) => r.deploymentId === id && r.status === 'running').length;
    await until(() => running('dep-again') === 2 && running('dep-other') === 1);
    const before = seen.length;
    const sts = await api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name: 'dep-again' });
    watcher.resend('dep-again', new Set([sts!.metadata!.uid!]));
    assert.deepEqual(seen.slice(before).map((r) => `${r.podName} ${r.status}`).sort(), ['dep-again-0 running', 'dep-again-1 running']);
    watcher.resend('dep-unknown', new Set([sts!.metadata!.uid!]));
    assert.equal(seen.length, before + 2, 'nothing for a deployment without pods');
    // Pods of another StatefulSet (one a stop deleted, before a start made this one) are not
    // news: they are on their way out, whatever this cache still says of them.
    watcher.resend('dep-again', new Set(['uid-of-a-newer-statefulset']));
    assert.equal(seen.length, before + 2, 'no pod of an older owner resent');
  } finally {
    await watcher.stop();
  }
});

test('a pod whose StatefulSet is not the deployment\'s current one is reported pending, never running or failed; reports carry the applied generation', async () => {
  const seen: InstanceReport[] = [];
  const sink: StatusSink = { instance: (r) => void seen.push(r), sentinel: () => {}, apply: () => {}, gc: () => {} };
  // krane made a new StatefulSet of the same name (a stop, then a start): these pods are the old one's.
  let current: string | null | undefined = 'uid-of-the-new-statefulset';
  // dep-marker's owner is unknown to krane, so its pods are reported as they are.
  const watcher = new InstanceStatusWatcher({ api, namespace: 'unkey', sink, logger, relistIntervalMs: 60_000, minBackoffMs: 10, currentOwner: (id) => (id === 'dep-replaced' ? current : undefined), appliedGeneration: () => 2 });
  watcher.start();
  try {
    const ctl = controller(api);
    await ctl.apply(ref('dep-replaced'), deploymentState({ deploymentId: 'dep-replaced', replicas: 1 }));
    // Its pod comes up (creating, then running), and every report of it says pending.
    await until(async () => {
      const pod = await api.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'unkey', name: 'dep-replaced-0' });
      return (pod as { status?: { conditions?: { type: string; status: string }[] } } | undefined)?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    }, { what: 'dep-replaced-0 Ready in the cluster' });
    // The watcher has seen that: a pod started after it is reported running, and the pods'
    // watch delivers events in order.
    await ctl.apply(ref('dep-marker'), deploymentState({ deploymentId: 'dep-marker', replicas: 1 }));
    await until(() => seen.some((r) => r.deploymentId === 'dep-marker' && r.status === 'running'), { what: 'dep-marker reported running', show: () => seen.map((r) => `${r.podName} ${r.status}`) });
    const replaced = seen.filter((r) => r.deploymentId === 'dep-replaced');
    assert.ok(replaced.length > 0 && replaced.every((r) => r.status === 'pending'), JSON.stringify(replaced));
    assert.ok(replaced.some((r) => r.reason?.startsWith('Replaced')), JSON.stringify(replaced));
    assert.equal(seen.filter((r) => r.deploymentId === 'dep-replaced' && r.status === 'running').length, 0);
    // Once krane knows this one as the current StatefulSet (or before it knows any), they are what they are.
    const sts = await api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name: 'dep-replaced' });
    current = sts!.metadata!.uid!;
    await until(() => (watcher.resend('dep-replaced', new Set([current!])), seen.at(-1)?.status === 'running'));
    // Every report carries the generation krane had applied when it made it.
    assertEvery(seen.filter((r) => r.deploymentId === 'dep-replaced'), (r) => r.generation === 2);
  } finally {
    await watcher.stop();
  }
});

test('sentinel status: healthy on the rolled-out image; a crashing new image is unhealthy and keeps the old running image', async () => {
  const seen: SentinelStatus[] = [];
  const sink: StatusSink = { instance: () => {}, sentinel: (s) => void seen.push(s), apply: () => {}, gc: () => {} };
  const watcher = new SentinelStatusWatcher({ api, namespace: 'sentinel', sink, logger, relistIntervalMs: 60_000 });
  watcher.start();
  try {
    const ctl = controller(api);
    const sref: ResourceRef = { type: 'sentinel', id: 'snt-st', region: 'us-east-1' };
    await ctl.apply(sref, sentinelState({ sentinelId: 'snt-st', environmentId: 'env-st', image: 'sentinel:v1', replicas: 2 }));
    const healthy = await until(() => seen.find((s) => s.sentinelId === 'snt-st' && s.health === 'healthy'));
    assert.equal(healthy.runningImage, 'sentinel:v1');
    assert.equal(healthy.availableReplicas, 2);
    assert.ok(healthy.observedGeneration >= 1);
    await ctl.apply(sref, sentinelState({ sentinelId: 'snt-st', environmentId: 'env-st', image: 'sentinel:v2-crash', replicas: 2 }));
    const bad = await until(() => seen.find((s) => s.sentinelId === 'snt-st' && s.health === 'unhealthy'));
    assert.equal(bad.runningImage, 'sentinel:v1');
  } finally {
    await watcher.stop();
  }
});
