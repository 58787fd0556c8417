// The API server's rules, each checked through the unchanged client the way krane meets them:
// status code, reason and the Status message (and its causes where clients read them).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { PatchStrategy } from '@kubernetes/client-node';
import { deployment, errorOf, recordWatch, service, startSim, statefulSet, waitFor, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim();
});
after(async () => {
  await f.close();
});

const apply = (obj: unknown, manager: string, force = false) =>
  f.objects.patch(structuredClone(obj) as any, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);

test('StatefulSet: spec fields other than the mutable ones are immutable (422 Invalid)', async () => {
  await f.apps.createNamespacedStatefulSet({ namespace: 'default', body: statefulSet('imm', 'nginx:1', 1) as any });
  const patch = (body: unknown[]) => f.apps.patchNamespacedStatefulSet({ name: 'imm', namespace: 'default', body });
  const e = await errorOf(patch([{ op: 'replace', path: '/spec/serviceName', value: 'other' }]));
  assert.equal(e.code, 422);
  assert.equal(e.body.reason, 'Invalid');
  assert.equal(
    e.body.message,
    `StatefulSet.apps "imm" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden`,
  );
  assert.deepEqual(e.body.details.causes.map((c: any) => [c.reason, c.field]), [['FieldValueForbidden', 'spec']]);
  // The mutable ones change fine.
  const ok = await patch([{ op: 'replace', path: '/spec/replicas', value: 2 }, { op: 'add', path: '/spec/minReadySeconds', value: 1 }]);
  assert.equal(ok.spec!.replicas, 2);
});

test('Deployment: spec.selector is immutable (422 Invalid, the value printed as the API server does)', async () => {
  await f.apps.createNamespacedDeployment({ namespace: 'default', body: deployment('sel', 'nginx:1', 1) as any });
  const body = [
    { op: 'replace', path: '/spec/selector', value: { matchLabels: { app: 'sel', tier: 'web' } } },
    { op: 'replace', path: '/spec/template/metadata/labels', value: { app: 'sel', tier: 'web' } },
  ];
  const e = await errorOf(f.apps.patchNamespacedDeployment({ name: 'sel', namespace: 'default', body }));
  assert.equal(e.code, 422);
  assert.equal(e.body.reason, 'Invalid');
  assert.equal(
    e.body.message,
    'Deployment.apps "sel" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"sel", "tier":"web"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable',
  );
  assert.equal(e.body.details.causes[0].field, 'spec.selector');
});

test('Service: spec.clusterIP may not change once set (422 Invalid)', async () => {
  const created = await f.core.createNamespacedService({ namespace: 'default', body: service('ipfix') as any });
  const ip = created.spec!.clusterIP!;
  created.spec!.clusterIP = '10.96.200.200';
  const e = await errorOf(f.core.replaceNamespacedService({ name: 'ipfix', namespace: 'default', body: created }));
  assert.equal(e.code, 422);
  assert.equal(e.body.reason, 'Invalid');
  assert.equal(e.body.message, 'Service "ipfix" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.200.200"}: may not change once set');
  assert.equal((await f.core.readNamespacedService({ name: 'ipfix', namespace: 'default' })).spec!.clusterIP, ip);
});

test('server-side apply: a field another manager owns conflicts (409) unless forced', async () => {
  const sts = statefulSet('owned', 'nginx:1', 1);
  await apply(sts, 'krane', true);
  const other = structuredClone(sts);
  other.spec.replicas = 3;
  const e = await errorOf(apply(other, 'ops'));
  assert.equal(e.code, 409);
  assert.equal(e.body.reason, 'Conflict');
  assert.equal(e.body.message, 'Apply failed with 1 conflict: conflict with "krane": .spec.replicas');
  assert.deepEqual(e.body.details.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "krane"', field: '.spec.replicas' }]);
  // Two fields: grouped by manager, one per line.
  other.spec.template.spec.containers[0]!.image = 'nginx:2';
  const two = await errorOf(apply(other, 'ops'));
  assert.equal(two.body.message, 'Apply failed with 2 conflicts: conflicts with "krane":\n- .spec.replicas\n- .spec.template.spec.containers[name="app"].image');
  // An updater (PUT/PATCH) is named with its API version.
  await f.apps.patchNamespacedStatefulSet({ name: 'owned', namespace: 'default', body: [{ op: 'replace', path: '/spec/replicas', value: 2 }], fieldManager: 'hand' });
  const upd = await errorOf(apply(sts, 'krane'));
  assert.equal(upd.body.message, 'Apply failed with 1 conflict: conflict with "hand" using apps/v1: .spec.replicas');
  const forced = await apply(other, 'ops', true);
  assert.equal((forced as any).spec.replicas, 3);
});

test('update with a stale resourceVersion: 409 Conflict, "the object has been modified"', async () => {
  const cm = await f.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'stale' }, data: { a: '1' } } });
  await f.core.replaceNamespacedConfigMap({ name: 'stale', namespace: 'default', body: { ...cm, data: { a: '2' } } });
  const e = await errorOf(f.core.replaceNamespacedConfigMap({ name: 'stale', namespace: 'default', body: { ...cm, data: { a: '3' } } }));
  assert.equal(e.code, 409);
  assert.equal(e.body.reason, 'Conflict');
  assert.equal(e.body.message, 'Operation cannot be fulfilled on configmaps "stale": the object has been modified; please apply your changes to the latest version and try again');
});

test('finalizers: delete marks the object (MODIFIED with deletionTimestamp); it goes when the last finalizer is removed', async () => {
  await f.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'fin', finalizers: ['example.com/hold'] } } });
  const w = await recordWatch(f.kc, '/api/v1/namespaces/default/configmaps', { fieldSelector: 'metadata.name=fin' });
  try {
    await f.core.deleteNamespacedConfigMap({ name: 'fin', namespace: 'default' });
    const modified = await waitFor('MODIFIED with deletionTimestamp', () => w.events.find((e) => e.type === 'MODIFIED' && e.object.metadata.deletionTimestamp));
    assert.deepEqual(modified.object.metadata.finalizers, ['example.com/hold']);
    const held = await f.core.readNamespacedConfigMap({ name: 'fin', namespace: 'default' });
    assert.ok(held.metadata!.deletionTimestamp);
    await f.objects.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fin', namespace: 'default', finalizers: null } } as any, undefined, undefined, 'tester', undefined, PatchStrategy.MergePatch);
    await waitFor('DELETED', () => w.events.find((e) => e.type === 'DELETED'));
    assert.equal((await errorOf(f.core.readNamespacedConfigMap({ name: 'fin', namespace: 'default' }))).code, 404);
  } finally {
    w.stop();
  }
});

test('a namespace being deleted is Terminating and refuses creates (403 Forbidden)', async () => {
  await f.core.createNamespace({ body: { metadata: { name: 'doomed' } } });
  await f.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'keep', finalizers: ['example.com/hold'] } } });
  await f.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'plain' } } });
  const ns = await f.core.deleteNamespace({ name: 'doomed' });
  assert.equal((ns as any).status.phase, 'Terminating');
  assert.equal((await errorOf(f.core.readNamespacedConfigMap({ name: 'plain', namespace: 'doomed' }))).code, 404);
  const e = await errorOf(f.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'late' } } }));
  assert.equal(e.code, 403);
  assert.equal(e.body.reason, 'Forbidden');
  assert.equal(e.body.message, 'configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated');
  assert.deepEqual(e.body.details.causes, [{ reason: 'NamespaceTerminating', message: 'namespace doomed is being terminated', field: 'metadata.namespace' }]);
  await f.objects.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'keep', namespace: 'doomed', finalizers: null } } as any, undefined, undefined, 'tester', undefined, PatchStrategy.MergePatch);
  assert.equal((await errorOf(f.core.readNamespace({ name: 'doomed' }))).code, 404, 'the namespace goes once empty');
});

test('ResourceQuota: creates past a hard count are refused (403 exceeded quota), for pods and count/*', async () => {
  await f.core.createNamespace({ body: { metadata: { name: 'quota' } } });
  await f.core.createNamespacedResourceQuota({ namespace: 'quota', body: { metadata: { name: 'small' }, spec: { hard: { pods: '1', 'count/configmaps': '1' } } } });
  await f.core.createNamespacedConfigMap({ namespace: 'quota', body: { metadata: { name: 'one' } } });
  const e = await errorOf(f.core.createNamespacedConfigMap({ namespace: 'quota', body: { metadata: { name: 'two' } } }));
  assert.equal(e.code, 403);
  assert.equal(e.body.reason, 'Forbidden');
  assert.equal(e.body.message, 'configmaps "two" is forbidden: exceeded quota: small, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1');
  const pod = (name: string) => ({ metadata: { name }, spec: { containers: [{ name: 'app', image: 'nginx:1' }] } });
  await f.core.createNamespacedPod({ namespace: 'quota', body: pod('p1') });
  const p = await errorOf(f.core.createNamespacedPod({ namespace: 'quota', body: pod('p2') }));
  assert.equal(p.code, 403);
  assert.equal(p.body.message, 'pods "p2" is forbidden: exceeded quota: small, requested: pods=1, used: pods=1, limited: pods=1');
  const q = await waitFor('quota status', async () => {
    const r = await f.core.readNamespacedResourceQuota({ name: 'small', namespace: 'quota' });
    return r.status?.used?.pods === '1' && r.status.used['count/configmaps'] === '1' ? r : undefined;
  });
  assert.deepEqual(q.status!.hard, { pods: '1', 'count/configmaps': '1' });
  // A controller's pods are refused the same way, and it says so in an event.
  await apply({ ...statefulSet('capped', 'nginx:1', 2), metadata: { name: 'capped', namespace: 'quota', labels: { app: 'capped' } } }, 'krane', true);
  const ev = await waitFor('FailedCreate event', async () => (await f.core.listNamespacedEvent({ namespace: 'quota', fieldSelector: 'reason=FailedCreate' })).items[0]);
  assert.match(ev.message!, /create Pod capped-0 in StatefulSet capped failed error: pods "capped-0" is forbidden: exceeded quota: small/);
  // Once the quota has room, the controller tries again by itself (with backoff), as the real
  // controllers requeue a failed sync: nothing else touches the StatefulSet or its pods.
  await f.core.deleteNamespacedPod({ name: 'p1', namespace: 'quota' });
  await waitFor('capped-0 created once the quota has room', async () =>
    (await f.core.listNamespacedPod({ namespace: 'quota' })).items.some((x) => x.metadata?.name === 'capped-0'),
  );
});

test('rate limit: past the bucket the answer is 429 with Retry-After (off by default, set by the admin API)', async () => {
  const admin = (method: string, body?: unknown) => f.fetch(`${f.url}/_sim/ratelimit`, { method, body: body ? JSON.stringify(body) : undefined });
  assert.deepEqual(await (await admin('GET')).json(), { limit: null, rateLimited: 0 });
  const bad = await admin('POST', { qps: 0 });
  assert.equal(bad.status, 400);
  assert.equal((await admin('POST', { qps: 0.001, burst: 2, retryAfterSeconds: 7 })).status, 200);
  try {
    await f.core.listNamespacedConfigMap({ namespace: 'default' });
    await f.core.listNamespacedConfigMap({ namespace: 'default' });
    const e = await errorOf(f.core.listNamespacedConfigMap({ namespace: 'default' }));
    assert.equal(e.code, 429);
    const raw = await f.fetch(`${f.url}/api/v1/namespaces/default/configmaps`);
    assert.equal(raw.status, 429);
    assert.equal(raw.headers.get('retry-after'), '7');
    assert.equal(await raw.text(), 'Too many requests, please try again later.\n');
  } finally {
    await admin('DELETE');
  }
  await f.core.listNamespacedConfigMap({ namespace: 'default' });
});

test('size limits: bodies over 3 MiB get 413; objects over 1.5 MiB get etcd\'s error as a 500', async () => {
  const big = (n: number) => ({ metadata: { name: `big-${n}` }, data: { blob: 'x'.repeat(n) } });
  const e413 = await errorOf(f.core.createNamespacedConfigMap({ namespace: 'default', body: big(3 * 1024 * 1024 + 10) }));
  assert.equal(e413.code, 413);
  assert.equal(e413.body.reason, 'RequestEntityTooLarge');
  assert.equal(e413.body.message, 'Request entity too large: limit is 3145728');
  const e500 = await errorOf(f.core.createNamespacedConfigMap({ namespace: 'default', body: big(2 * 1024 * 1024) }));
  assert.equal(e500.code, 500);
  assert.equal(e500.body.reason, undefined);
  assert.equal(e500.body.message, 'etcdserver: request is too large');
  await f.core.createNamespacedConfigMap({ namespace: 'default', body: big(1024 * 1024) });
});
