// What real clients need beyond CRUD: Tables for kubectl get, the scale subresource, pod logs,
// Events of the pod lifecycle, FailedScheduling, and Leases for leader election.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { CoordinationV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { deployment, errorOf, startSim, statefulSet, waitFor, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim({ logIntervalMs: 20 });
});
after(async () => {
  await f.close();
});

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const table = async (path: string, accept = TABLE) => (await (await f.fetch(`${f.url}${path}`, { headers: { accept } })).json()) as any;
const columns = (t: any) => t.columnDefinitions.filter((c: any) => !c.priority).map((c: any) => c.name);
const apply = (obj: unknown) => f.objects.patch(structuredClone(obj) as any, undefined, undefined, 'krane', true, PatchStrategy.ServerSideApply);
const readyPods = (prefix: string, n: number) =>
  waitFor(`${n} ready ${prefix} pods`, async () => {
    const pods = (await f.core.listNamespacedPod({ namespace: 'default' })).items.filter((p) => p.metadata!.name!.startsWith(prefix));
    return pods.length === n && pods.every((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) ? pods : undefined;
  });

test('Table output: kubectl columns per kind, PartialObjectMetadata rows, v1beta1 too', async () => {
  await apply(statefulSet('tab', 'nginx:1', 2));
  await apply(deployment('tabd', 'nginx:1', 1));
  await readyPods('tab-', 2);
  const pods = await table('/api/v1/namespaces/default/pods');
  assert.equal(pods.kind, 'Table');
  assert.equal(pods.apiVersion, 'meta.k8s.io/v1');
  assert.deepEqual(columns(pods), ['Name', 'Ready', 'Status', 'Restarts', 'Age']);
  assert.deepEqual(pods.columnDefinitions.filter((c: any) => c.priority === 1).map((c: any) => c.name), ['IP', 'Node', 'Nominated Node', 'Readiness Gates']);
  const row = pods.rows.find((r: any) => r.cells[0] === 'tab-0');
  assert.deepEqual(row.cells.slice(1, 4), ['1/1', 'Running', '0']);
  assert.equal(row.object.kind, 'PartialObjectMetadata');
  assert.equal(row.object.metadata.name, 'tab-0');
  const sts = await table('/apis/apps/v1/namespaces/default/statefulsets/tab');
  assert.deepEqual(columns(sts), ['Name', 'Ready', 'Age']);
  await waitFor('sts ready 2/2', async () => (await table('/apis/apps/v1/namespaces/default/statefulsets/tab')).rows[0].cells[1] === '2/2');
  assert.deepEqual(columns(await table('/apis/apps/v1/namespaces/default/deployments')), ['Name', 'Ready', 'Up-to-date', 'Available', 'Age']);
  assert.deepEqual(columns(await table('/api/v1/namespaces/default/services')), ['Name', 'Type', 'Cluster-IP', 'External-IP', 'Port(s)', 'Age']);
  assert.deepEqual(columns(await table('/apis/policy/v1/namespaces/default/poddisruptionbudgets')), ['Name', 'Min Available', 'Max Unavailable', 'Allowed Disruptions', 'Age']);
  assert.deepEqual(columns(await table('/apis/coordination.k8s.io/v1/namespaces/default/leases')), ['Name', 'Holder', 'Age']);
  assert.deepEqual(columns(await table('/api/v1/namespaces/default/events')), ['Last Seen', 'Type', 'Reason', 'Object', 'Message']);
  assert.deepEqual(columns(await table('/api/v1/namespaces')), ['Name', 'Status', 'Age']);
  assert.deepEqual(columns(await table('/apis/cilium.io/v2/namespaces/default/ciliumnetworkpolicies')), ['Name', 'Age']);
  const beta = await table('/api/v1/namespaces/default/pods?includeObject=None', 'application/json;as=Table;v=v1beta1;g=meta.k8s.io');
  assert.equal(beta.apiVersion, 'meta.k8s.io/v1beta1');
  assert.equal(beta.rows[0].object, undefined);
  // Without the Table media type: the plain list.
  assert.equal((await table('/api/v1/namespaces/default/pods', 'application/json')).kind, 'PodList');
});

test('scale subresource: get, update and patch an autoscaling/v1 Scale of StatefulSets and Deployments', async () => {
  await apply(statefulSet('sc', 'nginx:1', 1));
  await readyPods('sc-', 1);
  const scale = await f.apps.readNamespacedStatefulSetScale({ name: 'sc', namespace: 'default' });
  assert.equal(scale.kind, 'Scale');
  assert.equal(scale.apiVersion, 'autoscaling/v1');
  assert.equal(scale.spec!.replicas, 1);
  assert.equal(scale.status!.selector, 'app=sc');
  scale.spec!.replicas = 2;
  const put = await f.apps.replaceNamespacedStatefulSetScale({ name: 'sc', namespace: 'default', body: scale });
  assert.equal(put.spec!.replicas, 2);
  await readyPods('sc-', 2);
  const stale = await errorOf(f.apps.replaceNamespacedStatefulSetScale({ name: 'sc', namespace: 'default', body: scale }));
  assert.equal(stale.code, 409);
  await apply(deployment('scd', 'nginx:1', 1));
  const patched = await f.apps.patchNamespacedDeploymentScale({ name: 'scd', namespace: 'default', body: { spec: { replicas: 3 } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  assert.equal(patched.spec!.replicas, 3);
  assert.equal((await f.apps.readNamespacedDeployment({ name: 'scd', namespace: 'default' })).spec!.replicas, 3);
  const neg = await errorOf(f.apps.patchNamespacedDeploymentScale({ name: 'scd', namespace: 'default', body: { spec: { replicas: -1 } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)));
  assert.equal(neg.code, 422);
  assert.equal(neg.body.message, 'Scale.autoscaling "scd" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0');
  // The manager that scaled owns spec.replicas through the subresource.
  const dep = await f.apps.readNamespacedDeployment({ name: 'scd', namespace: 'default' });
  assert.ok(dep.metadata!.managedFields!.some((m) => m.subresource === 'scale'));
});

test('pod logs: synthetic lines; a crash image says why; tailLines, previous and errors as the kubelet answers', async () => {
  await apply(statefulSet('logs', 'nginx:1', 1));
  await readyPods('logs-', 1);
  const text = await f.core.readNamespacedPodLog({ name: 'logs-0', namespace: 'default' });
  assert.match(text, /^starting nginx:1 \(container app\)\n/);
  await waitFor('health-check lines', async () => (await f.core.readNamespacedPodLog({ name: 'logs-0', namespace: 'default' })).includes('GET /healthz 200'));
  const tail = await f.core.readNamespacedPodLog({ name: 'logs-0', namespace: 'default', tailLines: 1 });
  assert.equal(tail, 'GET /healthz 200\n');
  const noPrev = await errorOf(f.core.readNamespacedPodLog({ name: 'logs-0', namespace: 'default', previous: true }));
  assert.equal(noPrev.code, 400);
  assert.equal(noPrev.body.message, 'previous terminated container "app" in pod "logs-0" not found');
  await apply(statefulSet('boom', 'registry/app:crash', 1));
  await waitFor('a crash', async () => (await f.core.readNamespacedPod({ name: 'boom-0', namespace: 'default' })).status?.containerStatuses?.[0]?.lastState?.terminated);
  const crash = await f.core.readNamespacedPodLog({ name: 'boom-0', namespace: 'default', previous: true });
  assert.match(crash, /fatal: exiting with code 1: the image registry\/app:crash is built to crash/);
  await apply(statefulSet('oom', 'registry/app:oom', 1));
  await waitFor('an OOM kill', async () => (await f.core.readNamespacedPod({ name: 'oom-0', namespace: 'default' })).status?.containerStatuses?.[0]?.state?.terminated ?? (await f.core.readNamespacedPod({ name: 'oom-0', namespace: 'default' })).status?.containerStatuses?.[0]?.lastState?.terminated);
  assert.match(await f.core.readNamespacedPodLog({ name: 'oom-0', namespace: 'default' }), /OOMKilled.*killed/);
  await apply(statefulSet('nopull', 'registry/app:pullfail', 1));
  await waitFor('pull error', async () => (await f.core.readNamespacedPod({ name: 'nopull-0', namespace: 'default' })).status?.containerStatuses?.[0]?.state?.waiting?.reason?.match(/ErrImagePull|ImagePullBackOff/));
  // Read until it says so: on a loaded machine the log request has been seen to meet the pod
  // between two of its status writes (ContainerCreating), which is a real kubelet answer too.
  const waiting = await waitFor('the pull error in the log answer', async () => {
    const e = await errorOf(f.core.readNamespacedPodLog({ name: 'nopull-0', namespace: 'default' }));
    return /trying and failing to pull image/.test(e.body.message) ? e : undefined;
  });
  assert.equal(waiting.code, 400);
  assert.equal(waiting.body.message, 'container "app" in pod "nopull-0" is waiting to start: trying and failing to pull image');
});

test('events: the pod lifecycle as core/v1 Events, selectable by involvedObject; FailedScheduling for a pod that fits no node', async () => {
  await apply(statefulSet('evt', 'nginx:1', 1));
  await readyPods('evt-', 1);
  const pod = await f.core.readNamespacedPod({ name: 'evt-0', namespace: 'default' });
  const sel = `involvedObject.name=evt-0,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=${pod.metadata!.uid}`;
  const events = await waitFor('lifecycle events', async () => {
    const list = (await f.core.listNamespacedEvent({ namespace: 'default', fieldSelector: sel })).items;
    return list.length >= 5 ? list : undefined;
  });
  assert.deepEqual(events.map((e) => e.reason), ['Scheduled', 'Pulling', 'Pulled', 'Created', 'Started']);
  assert.equal(events[0]!.source!.component, 'default-scheduler');
  assert.equal(events[4]!.message, 'Started container app');
  await apply(statefulSet('crashy', 'x:crash', 1));
  const backoff = await waitFor('BackOff counted', async () => (await f.core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.name=crashy-0,reason=BackOff' })).items.find((e) => (e.count ?? 0) >= 2));
  assert.equal(backoff.type, 'Warning');
  const huge = statefulSet('huge', 'nginx:1', 1);
  (huge.spec.template.spec.containers[0] as any).resources = { requests: { cpu: '64' } };
  await apply(huge);
  const failed = await waitFor('FailedScheduling', async () => (await f.core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.name=huge-0,reason=FailedScheduling' })).items[0]);
  assert.match(failed.message!, /^0\/3 nodes are available: 3 Insufficient cpu/);
  const p = await f.core.readNamespacedPod({ name: 'huge-0', namespace: 'default' });
  assert.equal(p.status!.phase, 'Pending');
  assert.equal(p.status!.conditions![0]!.reason, 'Unschedulable');
  // Deleting the pod stops its containers.
  await f.core.deleteNamespacedPod({ name: 'evt-0', namespace: 'default' });
  await waitFor('Killing', async () => (await f.core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.uid=${pod.metadata!.uid},reason=Killing` })).items[0]);
});

test('events are bounded: past the limit the oldest are deleted', async () => {
  const small = await startSim({ eventLimit: 6 });
  try {
    await small.objects.patch(statefulSet('a', 'nginx:1', 2) as any, undefined, undefined, 'krane', true, PatchStrategy.ServerSideApply);
    await waitFor('pods started', async () => (await small.core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'reason=Started' })).items.length >= 1, 5_000);
    await waitFor('bounded', async () => (await small.core.listNamespacedEvent({ namespace: 'default' })).items.length <= 6);
  } finally {
    await small.close();
  }
});

test('Leases: CRUD, and leader election by resourceVersion (a racing update gets 409; an update needs a resourceVersion)', async () => {
  const leases = f.kc.makeApiClient(CoordinationV1Api);
  const created = await leases.createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'krane-us' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15, renewTime: new Date() as any } } });
  const a = await leases.readNamespacedLease({ name: 'krane-us', namespace: 'default' });
  const b = await leases.readNamespacedLease({ name: 'krane-us', namespace: 'default' });
  a.spec!.holderIdentity = 'a';
  a.spec!.renewTime = new Date() as any;
  await leases.replaceNamespacedLease({ name: 'krane-us', namespace: 'default', body: a });
  b.spec!.holderIdentity = 'b';
  const race = await errorOf(leases.replaceNamespacedLease({ name: 'krane-us', namespace: 'default', body: b }));
  assert.equal(race.code, 409);
  assert.equal(race.body.message, 'Operation cannot be fulfilled on leases.coordination.k8s.io "krane-us": the object has been modified; please apply your changes to the latest version and try again');
  const unconditional = { ...b, metadata: { ...b.metadata, resourceVersion: undefined } };
  const noRv = await errorOf(leases.replaceNamespacedLease({ name: 'krane-us', namespace: 'default', body: unconditional }));
  assert.equal(noRv.code, 422);
  assert.equal(noRv.body.message, 'Lease.coordination.k8s.io "krane-us" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');
  const t = await table('/apis/coordination.k8s.io/v1/namespaces/default/leases/krane-us');
  assert.deepEqual(t.rows[0].cells.slice(0, 2), ['krane-us', 'a']);
  const list = await leases.listNamespacedLease({ namespace: 'default' });
  assert.ok(list.items.some((l) => l.metadata!.uid === created.metadata!.uid));
  await leases.deleteNamespacedLease({ name: 'krane-us', namespace: 'default' });
});
