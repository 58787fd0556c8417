import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { PatchStrategy } from '@kubernetes/client-node';
import { startSim, recordWatch, service, statefulSet, waitFor, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim();
});
after(async () => {
  await f.close();
});

const apply = (obj: unknown, manager = 'krane', force = true) =>
  f.objects.patch(structuredClone(obj) as any, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);

const errorOf = async (p: Promise<unknown>): Promise<{ code: number; body: any }> => {
  try {
    await p;
  } catch (e: any) {
    return { code: e.code, body: typeof e.body === 'string' ? JSON.parse(e.body) : e.body };
  }
  throw new Error('expected the request to fail');
};

test('discovery serves the groups and kinds the client maps to plural names', async () => {
  const res = await f.fetch(`${f.url}/apis`);
  const groups = (await res.json()) as { groups: { name: string }[] };
  assert.deepEqual(groups.groups.map((g) => g.name).sort(), ['apiextensions.k8s.io', 'apps', 'authorization.k8s.io', 'autoscaling', 'cilium.io', 'coordination.k8s.io', 'networking.k8s.io', 'policy', 'rbac.authorization.k8s.io']);
  const cilium = (await (await f.fetch(`${f.url}/apis/cilium.io/v2`)).json()) as { resources: { name: string; kind: string; namespaced: boolean }[] };
  assert.ok(cilium.resources.some((r) => r.kind === 'CiliumNetworkPolicy' && r.name === 'ciliumnetworkpolicies' && r.namespaced));
  const version = (await (await f.fetch(`${f.url}/version`)).json()) as { major: string };
  assert.equal(version.major, '1');
  // The client resolves each kind through discovery before using it (in a namespace of this
  // test's own, empty whatever the other tests made in `default`).
  await f.core.createNamespace({ body: { metadata: { name: 'discovery-empty' } } });
  for (const [apiVersion, kind] of [['v1', 'Service'], ['v1', 'Pod'], ['apps/v1', 'StatefulSet'], ['apps/v1', 'Deployment'], ['policy/v1', 'PodDisruptionBudget'], ['cilium.io/v2', 'CiliumNetworkPolicy']]) {
    const list = await f.objects.list(apiVersion!, kind!, 'discovery-empty');
    assert.deepEqual(list.items, [], `${kind} list`);
  }
});

test('namespaces: objects need an existing namespace; deleting one removes its objects', async () => {
  const inMissing = { ...service('x'), metadata: { name: 'x', namespace: 'nowhere' } };
  const e = await errorOf(f.objects.create(inMissing as any));
  assert.equal(e.code, 404);
  assert.equal(e.body.reason, 'NotFound');
  await f.core.createNamespace({ body: { metadata: { name: 'tmp-ns' } } });
  await f.objects.create({ ...service('x'), metadata: { name: 'x', namespace: 'tmp-ns' } } as any);
  const ns = await f.core.readNamespace({ name: 'tmp-ns' });
  assert.equal(ns.status?.phase, 'Active');
  await f.core.deleteNamespace({ name: 'tmp-ns' });
  assert.equal((await errorOf(f.core.readNamespacedService({ name: 'x', namespace: 'tmp-ns' }))).code, 404);
});

test('CRUD with typed clients: create, get, replace with resourceVersion, conflict, delete', async () => {
  const created = await f.core.createNamespacedService({ namespace: 'default', body: service('crud') as any });
  assert.ok(created.metadata?.uid);
  assert.match(created.spec?.clusterIP ?? '', /^10\.96\./);
  const dup = await errorOf(f.core.createNamespacedService({ namespace: 'default', body: service('crud') as any }));
  assert.equal(dup.code, 409);
  assert.equal(dup.body.reason, 'AlreadyExists');

  const got = await f.core.readNamespacedService({ name: 'crud', namespace: 'default' });
  got.metadata!.labels = { ...got.metadata!.labels, tier: 'web' };
  const replaced = await f.core.replaceNamespacedService({ name: 'crud', namespace: 'default', body: got });
  assert.equal(replaced.metadata?.labels?.tier, 'web');
  assert.notEqual(replaced.metadata?.resourceVersion, got.metadata?.resourceVersion);
  // A replace based on the stale object conflicts.
  const stale = await errorOf(f.core.replaceNamespacedService({ name: 'crud', namespace: 'default', body: got }));
  assert.equal(stale.code, 409);
  assert.equal(stale.body.reason, 'Conflict');

  await f.core.deleteNamespacedService({ name: 'crud', namespace: 'default' });
  const gone = await errorOf(f.core.readNamespacedService({ name: 'crud', namespace: 'default' }));
  assert.equal(gone.code, 404);
  assert.equal(gone.body.kind, 'Status');
  assert.equal(gone.body.reason, 'NotFound');
});

test('server-side apply creates, updates, and a repeated apply is a no-op without events', async () => {
  const svc = service('ssa', { 'app.kubernetes.io/managed-by': 'krane' });
  const created = await apply(svc);
  assert.ok(created.metadata?.uid);
  const mf = created.metadata?.managedFields ?? [];
  assert.equal(mf.length, 1);
  assert.equal(mf[0]!.manager, 'krane');
  assert.equal(mf[0]!.operation, 'Apply');

  const rv = created.metadata!.resourceVersion!;
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/services', { resourceVersion: rv });
  try {
    const again = await apply(svc);
    assert.equal(again.metadata?.resourceVersion, rv, 'no-op apply keeps the resourceVersion');
    // An unrelated write marks the point by which any event of the no-op would have arrived.
    await apply(service('marker'));
    await waitFor('marker event', () => watch.events.some((e) => e.object.metadata.name === 'marker'));
    assert.deepEqual(watch.events.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED marker']);

    const changed = { ...svc, spec: { ...svc.spec, ports: [{ name: 'http', port: 81, targetPort: 8080 }] } };
    const updated = await apply(changed);
    assert.equal(updated.spec?.ports?.[0]?.port, 81);
    assert.notEqual(updated.metadata?.resourceVersion, rv);
    await waitFor('modified event', () => watch.events.some((e) => e.type === 'MODIFIED' && e.object.metadata.name === 'ssa'));
  } finally {
    watch.stop();
  }
});

test('apply removes fields the manager stopped applying and bumps generation on spec change', async () => {
  const sts = statefulSet('gen', 'app:v1', 1);
  const withLabel = { ...sts, metadata: { ...sts.metadata, labels: { ...sts.metadata.labels, extra: 'yes' } } };
  const a = await apply(withLabel);
  assert.equal(a.metadata?.generation, 1);
  assert.equal(a.metadata?.labels?.extra, 'yes');
  const b = await apply(sts);
  assert.equal(b.metadata?.labels?.extra, undefined, 'label dropped from the applied config is removed');
  assert.equal(b.metadata?.generation, 1, 'metadata-only change keeps generation');
  const c = await apply(statefulSet('gen', 'app:v2', 1));
  assert.equal(c.metadata?.generation, 2);
  assert.equal((c as any).spec.template.spec.containers[0].image, 'app:v2');
});

test('apply conflicts with another manager unless forced', async () => {
  await apply(service('owned'), 'krane');
  const other = { ...service('owned'), metadata: { name: 'owned', namespace: 'default', labels: { app: 'theirs' } } };
  const e = await errorOf(apply(other, 'someone-else', false));
  assert.equal(e.code, 409);
  assert.equal(e.body.reason, 'Conflict');
  assert.ok(e.body.details.causes.some((c: any) => c.reason === 'FieldManagerConflict' && c.field === '.metadata.labels.app'));
  const forced = await apply(other, 'someone-else', true);
  assert.equal(forced.metadata?.labels?.app, 'theirs');
  const managers = (forced.metadata?.managedFields ?? []).map((m: { manager?: string }) => m.manager).sort();
  assert.deepEqual(managers, ['krane', 'someone-else']);
  // krane lost the label it no longer owns; its next apply takes it back with force.
  const back = await apply(service('owned'), 'krane', true);
  assert.equal(back.metadata?.labels?.app, 'owned');
});

test('merge, strategic merge and JSON patches', async () => {
  await apply(statefulSet('patchme', 'app:v1', 1));
  const merged = await f.objects.patch({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'patchme', namespace: 'default', labels: { m: '1' } } } as any, undefined, undefined, 'tester', undefined, PatchStrategy.MergePatch);
  assert.equal(merged.metadata?.labels?.m, '1');
  const smp = await f.objects.patch(
    { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'patchme', namespace: 'default' }, spec: { template: { spec: { containers: [{ name: 'side', image: 'side:1' }] } } } } as any,
    undefined,
    undefined,
    'tester',
    undefined,
    PatchStrategy.StrategicMergePatch,
  );
  // Containers merge by name: the patch adds a container instead of replacing the list.
  assert.deepEqual((smp as any).spec.template.spec.containers.map((c: any) => c.name), ['app', 'side']);
  const jp = await f.apps.patchNamespacedStatefulSet({ name: 'patchme', namespace: 'default', body: [{ op: 'replace', path: '/spec/replicas', value: 0 }] });
  assert.equal(jp.spec?.replicas, 0);
});

test('label and field selectors', async () => {
  for (const [name, tier, env] of [['sel-a', 'web', 'prod'], ['sel-b', 'web', 'dev'], ['sel-c', 'db', 'prod'], ['sel-d', undefined, 'dev']] as const) {
    const labels: Record<string, string> = { group: 'sel', env };
    if (tier) labels.tier = tier;
    await f.objects.create({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default', labels }, spec: { ports: [{ port: 80 }] } } as any);
  }
  const names = async (labelSelector?: string, fieldSelector?: string) =>
    (await f.core.listNamespacedService({ namespace: 'default', labelSelector, fieldSelector })).items.map((s) => s.metadata!.name).filter((n) => n!.startsWith('sel-')).sort();
  assert.deepEqual(await names('group=sel,tier=web'), ['sel-a', 'sel-b']);
  assert.deepEqual(await names('group==sel,tier!=web'), ['sel-c', 'sel-d']);
  assert.deepEqual(await names('group=sel,env in (prod)'), ['sel-a', 'sel-c']);
  assert.deepEqual(await names('group=sel,tier notin (web,cache)'), ['sel-c', 'sel-d']);
  assert.deepEqual(await names('group=sel,tier'), ['sel-a', 'sel-b', 'sel-c']);
  assert.deepEqual(await names('group=sel,!tier'), ['sel-d']);
  assert.deepEqual(await names(undefined, 'metadata.name=sel-b'), ['sel-b']);
  assert.deepEqual(await names('group=sel', 'metadata.name!=sel-b,metadata.namespace=default'), ['sel-a', 'sel-c', 'sel-d']);
  const bad = await errorOf(f.core.listNamespacedService({ namespace: 'default', labelSelector: 'a in b' }));
  assert.equal(bad.code, 400);
});

test('limit and continue page through a list', async () => {
  const all = (await f.core.listNamespacedService({ namespace: 'default' })).items.length;
  const seen: string[] = [];
  let cont: string | undefined;
  do {
    const page = await f.core.listNamespacedService({ namespace: 'default', limit: 2, _continue: cont });
    assert.ok(page.items.length <= 2);
    seen.push(...page.items.map((s) => s.metadata!.name!));
    cont = page.metadata?._continue;
  } while (cont);
  assert.equal(seen.length, all);
  assert.equal(new Set(seen).size, all);
});

test('422 Invalid for objects that fail the official schema or the Cilium schema', async () => {
  const bad = statefulSet('invalid', 'x', 1) as any;
  bad.spec.replicas = 'three';
  delete bad.spec.template.spec.containers[0].name;
  const e = await errorOf(f.fetch(`${f.url}/apis/apps/v1/namespaces/default/statefulsets`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(bad) }).then(async (r) => {
    if (r.status >= 400) throw { code: r.status, body: await r.json() };
    return r;
  }));
  assert.equal(e.code, 422);
  assert.equal(e.body.reason, 'Invalid');
  const fields = e.body.details.causes.map((c: any) => c.field);
  assert.ok(fields.includes('spec.replicas'));
  assert.ok(fields.includes('spec.template.spec.containers[0].name'));

  const mismatch = statefulSet('mismatch', 'x', 1) as any;
  mismatch.spec.template.metadata.labels = { app: 'other' };
  const m = await errorOf(apply(mismatch));
  assert.equal(m.code, 422);

  const cnp = {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumNetworkPolicy',
    metadata: { name: 'gossip', namespace: 'default' },
    spec: { endpointSelector: { matchLabels: { app: 'sentinel' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'sentinel' } }], toPorts: [{ ports: [{ port: '7946', protocol: 'TCP' }] }] }] },
  };
  const ok = await apply(cnp);
  assert.equal(ok.metadata?.name, 'gossip');
  const badCnp = structuredClone(cnp) as any;
  badCnp.metadata.name = 'bad-gossip';
  badCnp.spec.ingress[0].toPorts[0].ports[0] = { port: 7946, protocol: 'XTP' };
  const c = await errorOf(apply(badCnp));
  assert.equal(c.code, 422);
  assert.equal(c.body.details.kind, 'CiliumNetworkPolicy');
});

test('watch resumes from a resourceVersion and delivers events in order, with selector moves', async () => {
  const list = await f.core.listNamespacedService({ namespace: 'default', labelSelector: 'w=1' });
  const rv = list.metadata!.resourceVersion!;
  await apply({ ...service('w-a'), metadata: { name: 'w-a', namespace: 'default', labels: { w: '1' } } });
  await apply({ ...service('w-b'), metadata: { name: 'w-b', namespace: 'default', labels: { w: '1' } } });
  // Leaving the selector is a DELETED for this watch.
  await apply({ ...service('w-a'), metadata: { name: 'w-a', namespace: 'default', labels: { w: '2' } } });
  await f.core.deleteNamespacedService({ name: 'w-b', namespace: 'default' });
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/services', { resourceVersion: rv, labelSelector: 'w=1' });
  try {
    await waitFor('4 events', () => watch.events.length >= 4);
    assert.deepEqual(watch.events.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED w-a', 'ADDED w-b', 'DELETED w-a', 'DELETED w-b']);
    const rvs = watch.events.map((e) => Number(e.object.metadata.resourceVersion));
    assert.deepEqual([...rvs].sort((a, b) => a - b), rvs);
    assert.equal(watch.events[0]!.object.kind, 'Service');
  } finally {
    watch.stop();
  }
});

test('watch sends bookmarks when allowed', async () => {
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/pods', { allowWatchBookmarks: true, resourceVersion: f.sim.api.currentResourceVersion });
  try {
    const bm = await waitFor('bookmark', () => watch.events.find((e) => e.type === 'BOOKMARK'));
    assert.equal(bm.object.kind, 'Pod');
    assert.ok(Number(bm.object.metadata.resourceVersion) > 0);
  } finally {
    watch.stop();
  }
});

test('410 Gone for an expired resourceVersion, then relist and watch again', async () => {
  const small = await startSim({ eventWindow: 4 });
  try {
    const rv = (await small.core.listNamespacedService({ namespace: 'default' })).metadata!.resourceVersion!;
    for (let i = 0; i < 30; i++) {
      await small.objects.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: `s${i}`, namespace: 'default' }, spec: { ports: [{ port: 80 }] } } as any);
    }
    const stale = await recordWatch(small.kc, '/api/v1/namespaces/default/services', { resourceVersion: rv });
    await stale.ended;
    assert.equal(stale.events.length, 1);
    assert.equal(stale.events[0]!.type, 'ERROR');
    assert.equal(stale.events[0]!.object.code, 410);
    assert.equal(stale.events[0]!.object.reason, 'Expired');

    const relist = await small.core.listNamespacedService({ namespace: 'default' });
    assert.equal(relist.items.length, 30);
    const fresh = await recordWatch(small.kc, '/api/v1/namespaces/default/services', { resourceVersion: relist.metadata!.resourceVersion });
    try {
      await small.objects.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'after', namespace: 'default' }, spec: { ports: [{ port: 80 }] } } as any);
      await waitFor('event after relist', () => fresh.events.some((e) => e.object.metadata?.name === 'after'));
      assert.deepEqual(fresh.events.map((e) => e.type), ['ADDED']);
    } finally {
      fresh.stop();
    }

    // The admin compaction expires every older resourceVersion at once.
    const before = small.sim.api.currentResourceVersion;
    await small.objects.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'one-more', namespace: 'default' }, spec: { ports: [{ port: 80 }] } } as any);
    const res = await fetch(`${small.url}/_sim/compact`, { method: 'POST' });
    assert.equal(res.status, 200);
    const compacted = await recordWatch(small.kc, '/api/v1/namespaces/default/services', { resourceVersion: before });
    await compacted.ended;
    assert.equal(compacted.events[0]?.object.code, 410);
  } finally {
    await small.close();
  }
});

test('deleting a StatefulSet cascades to its pods; orphan policy keeps them', async () => {
  await apply(statefulSet('cascade', 'app:v1', 2));
  await waitFor('2 pods', async () => (await f.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=cascade' })).items.length === 2);
  await f.apps.deleteNamespacedStatefulSet({ name: 'cascade', namespace: 'default' });
  assert.equal((await f.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=cascade' })).items.length, 0);

  await apply(statefulSet('orphans', 'app:v1', 1));
  await waitFor('pod', async () => (await f.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=orphans' })).items.length === 1);
  await f.apps.deleteNamespacedStatefulSet({ name: 'orphans', namespace: 'default', propagationPolicy: 'Orphan' });
  // The controllers work through their queue in order: once a workload made after the delete
  // has its pod, anything the delete set off has happened.
  await apply(statefulSet('after-orphans', 'app:v1', 1));
  await waitFor('the later pod', async () => (await f.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=after-orphans' })).items.length === 1);
  const left = await f.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=orphans' });
  assert.equal(left.items.length, 1);
  assert.equal(left.items[0]!.metadata?.ownerReferences, undefined);
});

test('status subresource: main writes ignore status, /status writes only status', async () => {
  const created = await apply(service('stat'));
  const withStatus = { ...created, status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } } };
  const viaMain = await f.core.replaceNamespacedService({ name: 'stat', namespace: 'default', body: withStatus as any });
  assert.deepEqual(viaMain.status?.loadBalancer?.ingress ?? [], []);
  const viaStatus = await f.core.replaceNamespacedServiceStatus({ name: 'stat', namespace: 'default', body: { ...viaMain, status: withStatus.status } as any });
  assert.equal(viaStatus.status?.loadBalancer?.ingress?.[0]?.ip, '1.2.3.4');
});

test('stats count requests by verb and reset', async () => {
  await f.fetch(`${f.url}/_sim/stats/reset`, { method: 'POST' });
  await apply(service('counted'));
  await apply(service('counted'));
  await f.core.readNamespacedService({ name: 'counted', namespace: 'default' });
  const stats = (await (await f.fetch(`${f.url}/_sim/stats`)).json()) as any;
  assert.equal(stats.byVerb.apply, 2);
  assert.equal(stats.byVerb.get, 1);
  assert.equal(stats.writes, 2);
  assert.equal(stats.mutations, 1);
  assert.equal(stats.noopWrites, 1);
  assert.ok(stats.requests >= 3);
});

test('API server rules: label syntax, StatefulSet spec immutability, ClusterIP kept and immutable', async () => {
  const badLabel = { ...service('badlabel'), metadata: { name: 'badlabel', namespace: 'default', labels: { app: 'has spaces' } } };
  const l = await errorOf(apply(badLabel));
  assert.equal(l.code, 422);
  assert.equal(l.body.details.causes[0].field, 'metadata.labels');

  await apply(statefulSet('frozen', 'app:v1', 1));
  const renamed = statefulSet('frozen', 'app:v1', 1) as any;
  renamed.spec.serviceName = 'other';
  const s = await errorOf(apply(renamed));
  assert.equal(s.code, 422);
  assert.match(s.body.message, /forbidden/);
  // replicas and template stay mutable.
  const scaled = await apply(statefulSet('frozen', 'app:v2', 2));
  assert.equal(scaled.spec?.replicas, 2);

  const svc = await f.core.createNamespacedService({ namespace: 'default', body: service('keepip') as any });
  const ip = svc.spec!.clusterIP!;
  const body = structuredClone(svc);
  delete body.spec!.clusterIP;
  delete body.spec!.clusterIPs;
  const kept = await f.core.replaceNamespacedService({ name: 'keepip', namespace: 'default', body });
  assert.equal(kept.spec?.clusterIP, ip);
  const moved = { ...kept, spec: { ...kept.spec, clusterIP: '10.96.200.200', clusterIPs: ['10.96.200.200'] } };
  const m = await errorOf(f.core.replaceNamespacedService({ name: 'keepip', namespace: 'default', body: moved }));
  assert.equal(m.code, 422);
});

test('finalizers hold a deleted object until the last one is removed', async () => {
  const created = await f.objects.create({ ...service('held'), metadata: { name: 'held', namespace: 'default', finalizers: ['example.com/hold'] } } as any);
  const watch = await recordWatch(f.kc, '/api/v1/namespaces/default/services', { resourceVersion: created.metadata!.resourceVersion!, fieldSelector: 'metadata.name=held' });
  try {
    await f.core.deleteNamespacedService({ name: 'held', namespace: 'default' });
    const marked = await f.core.readNamespacedService({ name: 'held', namespace: 'default' });
    assert.ok(marked.metadata?.deletionTimestamp, 'still there, marked for deletion');
    await f.objects.patch({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'held', namespace: 'default', finalizers: null } } as any, undefined, undefined, 'tester', undefined, PatchStrategy.MergePatch);
    assert.equal((await errorOf(f.core.readNamespacedService({ name: 'held', namespace: 'default' }))).code, 404);
    await waitFor('deleted event', () => watch.events.some((e) => e.type === 'DELETED'));
    assert.deepEqual(watch.events.map((e) => e.type), ['MODIFIED', 'MODIFIED', 'DELETED']);
  } finally {
    watch.stop();
  }
});
