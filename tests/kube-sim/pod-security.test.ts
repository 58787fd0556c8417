// Pod Security Admission from namespace labels, with the plugin's own messages: a direct pod
// create is a 403, a workload's refused pods are a FailedCreate event (and, for Deployments,
// the ReplicaFailure condition), baseline refuses only what baseline forbids, and a pod built
// as krane's hardening builds them is admitted at restricted. warn adds Warning headers (for
// pods and for workloads' templates), and pinned versions are judged by their own standard.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { podSecurityFailures } from '../../src/kube-sim/pod-security';
import { namespacePolicy } from '../../src/kube-sim/pod-security-policy';
import { deployment, startSim, statefulSet, waitFor, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim();
  for (const [name, level] of [['locked', 'restricted'], ['middle', 'baseline'], ['open', 'privileged']] as const) {
    f.sim.applyManifests([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': level, 'pod-security.kubernetes.io/enforce-version': 'latest' } } }]);
  }
});
after(() => f.close());

const pod = (name: string, ns: string, container: Record<string, unknown>, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns },
  spec: { containers: [{ name: 'c', image: 'nginx:1', ...container }], ...spec },
});

const RESTRICTED_OK = {
  securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
};

async function create(body: unknown, path = 'api/v1', plural = 'pods'): Promise<{ status: number; body: any; warnings: string | null }> {
  const ns = (body as { metadata: { namespace: string } }).metadata.namespace;
  const r = await f.fetch(`${f.url}/${path}/namespaces/${ns}/${plural}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json(), warnings: r.headers.get('warning') };
}

test('a privileged pod in a restricted namespace: 403 with the PodSecurity message', async () => {
  const r = await create(pod('priv', 'locked', { securityContext: { privileged: true } }));
  assert.equal(r.status, 403);
  assert.equal(r.body.reason, 'Forbidden');
  assert.equal(
    r.body.message,
    'pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true), ' +
      'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ' +
      'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
  );
  assert.deepEqual(r.body.details, { name: 'priv', group: '', kind: 'pods' });
  assert.equal((await create(pod('fine', 'locked', RESTRICTED_OK))).status, 201);
});

test('baseline refuses host namespaces and privilege but not a root container; privileged admits all', async () => {
  assert.equal((await create(pod('root', 'middle', {}))).status, 201);
  const host = await create(pod('host', 'middle', { ports: [{ containerPort: 80, hostPort: 8080 }] }, { hostNetwork: true }));
  assert.equal(host.status, 403);
  assert.equal(host.body.message, 'pods "host" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), hostPort (container "c" uses hostPort 8080)');
  assert.equal((await create(pod('anything', 'open', { securityContext: { privileged: true } }))).status, 201);
});

test('the check details, as the plugin words them', () => {
  const spec = (containers: unknown[], extra: Record<string, unknown> = {}) => ({ containers, ...extra });
  const details = (s: unknown, level: 'baseline' | 'restricted') => podSecurityFailures(s, level).map((x) => `${x.reason} (${x.detail})`);
  assert.deepEqual(details(spec([{ name: 'a', securityContext: { capabilities: { add: ['NET_ADMIN', 'CHOWN'] } } }, { name: 'b', securityContext: { capabilities: { add: ['SYS_ADMIN'] } } }]), 'baseline'), [
    'non-default capabilities (containers "a", "b" must not include "NET_ADMIN", "SYS_ADMIN" in securityContext.capabilities.add)',
  ]);
  assert.deepEqual(details(spec([{ name: 'a', ...RESTRICTED_OK }], { securityContext: { runAsUser: 0 }, volumes: [{ name: 'h', hostPath: { path: '/' } }] }), 'restricted'), [
    // restrictedVolumes replaces hostPathVolumes at restricted: one failure, not two.
    'restricted volume types (volume "h" uses restricted volume type "hostPath")',
    'runAsUser=0 (pod must not set runAsUser=0)',
  ]);
  assert.deepEqual(details(spec([{ name: 'a', securityContext: { ...RESTRICTED_OK.securityContext, runAsNonRoot: false, seccompProfile: { type: 'Unconfined' } } }]), 'restricted'), [
    'runAsNonRoot != true (container "a" must not set securityContext.runAsNonRoot=false)',
    'seccompProfile (container "a" must not set securityContext.seccompProfile.type to "Unconfined")',
  ]);
  // Pod-level settings cover containers that leave them unset.
  assert.deepEqual(details(spec([{ name: 'a', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }], { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } } }), 'restricted'), []);
});

test('workload controllers: refused pods are FailedCreate events, and a Deployment gets ReplicaFailure', async () => {
  const inLocked = <T extends { metadata: Record<string, unknown> }>(o: T): T => ({ ...o, metadata: { ...o.metadata, namespace: 'locked' } });
  await f.objects.create(inLocked(statefulSet('web', 'nginx:1', 1)) as any);
  const stsEvent = await waitFor('statefulset FailedCreate', async () => {
    const evs = await f.core.listNamespacedEvent({ namespace: 'locked', fieldSelector: 'involvedObject.name=web,reason=FailedCreate' });
    return evs.items[0];
  });
  assert.equal(stsEvent.type, 'Warning');
  assert.match(stsEvent.message!, /^create Pod web-0 in StatefulSet web failed error: pods "web-0" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false \(container "app" must set securityContext\.allowPrivilegeEscalation=false\), /);

  await f.objects.create(inLocked(deployment('api', 'nginx:1', 1)) as any);
  const cond = await waitFor('ReplicaFailure', async () => {
    const d = await f.apps.readNamespacedDeployment({ name: 'api', namespace: 'locked' });
    return d.status?.conditions?.find((c) => c.type === 'ReplicaFailure');
  });
  assert.equal(cond.status, 'True');
  assert.equal(cond.reason, 'FailedCreate');
  assert.match(cond.message!, /^pods "api-[a-z0-9]+-[a-z0-9]+" is forbidden: violates PodSecurity "restricted:latest": /);
  const ev = await waitFor('deployment FailedCreate', async () => (await f.core.listNamespacedEvent({ namespace: 'locked', fieldSelector: 'involvedObject.name=api,reason=FailedCreate' })).items[0]);
  assert.match(ev.message!, /^Error creating: pods "api-[a-z0-9]+-[a-z0-9]+" is forbidden: violates PodSecurity/);
  assert.equal((await f.core.listNamespacedPod({ namespace: 'locked', labelSelector: 'app=api' })).items.length, 0);
});

const ns = (name: string, labels: Record<string, string>) => f.sim.applyManifests([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } }]);

test('warn: an allowed pod gets the Warning header with the plugin\'s text; a refused one gets none', async () => {
  ns('warned', { 'pod-security.kubernetes.io/warn': 'baseline', 'pod-security.kubernetes.io/warn-version': 'v1.30' });
  const r = await create(pod('hosty', 'warned', { securityContext: { privileged: true } }, { hostNetwork: true }));
  assert.equal(r.status, 201);
  assert.equal(r.warnings, '299 - "would violate PodSecurity \\"baseline:v1.30\\": host namespaces (hostNetwork=true), privileged (container \\"c\\" must not set securityContext.privileged=true)"');
  assert.equal((await create(pod('plain', 'warned', {}))).warnings, null);
  const refused = await create(pod('priv2', 'locked', { securityContext: { privileged: true } }));
  assert.equal(refused.status, 403);
  assert.equal(refused.warnings, null);
});

test('workloads: never refused, but warned about when the template would violate warn (which follows enforce)', async () => {
  const d = { ...deployment('tmpl', 'nginx:1', 0), metadata: { name: 'tmpl', namespace: 'locked' } };
  const r = await create(d, 'apis/apps/v1', 'deployments');
  assert.equal(r.status, 201);
  assert.match(r.warnings!, /^299 - "would violate PodSecurity \\"restricted:latest\\": allowPrivilegeEscalation != false \(container \\"app\\" must set/);
  // An update of the object warns again; a /scale write does not.
  const current = await (await f.fetch(`${f.url}/apis/apps/v1/namespaces/locked/deployments/tmpl`)).json();
  const put = await f.fetch(`${f.url}/apis/apps/v1/namespaces/locked/deployments/tmpl`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(current) });
  assert.equal(put.status, 200);
  assert.match(put.headers.get('warning')!, /would violate PodSecurity/);
  const scale = await f.fetch(`${f.url}/apis/apps/v1/namespaces/locked/deployments/tmpl/scale`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ spec: { replicas: 0 } }) });
  assert.equal(scale.status, 200);
  assert.equal(scale.headers.get('warning'), null);
});

test('pod updates: enforce and warn see only a changed image (as the plugin), not a label change', async () => {
  f.sim.applyManifests([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tight-later' } }]);
  assert.equal((await create(pod('root2', 'tight-later', {}))).status, 201);
  ns('tight-later', { 'pod-security.kubernetes.io/enforce': 'restricted' });
  const url = `${f.url}/api/v1/namespaces/tight-later/pods/root2`;
  const patch = (body: unknown) => f.fetch(url, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify(body) });
  assert.equal((await patch({ metadata: { labels: { a: 'b' } } })).status, 200);
  const image = await patch({ spec: { containers: [{ name: 'c', image: 'nginx:2' }] } });
  assert.equal(image.status, 403);
  assert.match(((await image.json()) as any).message, /^pods "root2" is forbidden: violates PodSecurity "restricted:latest": /);
});

test('versions: a pinned version is judged by the standard of that release', () => {
  const details = (s: unknown, minor: number, annotations: Record<string, string> = {}) => podSecurityFailures(s, 'restricted', minor, annotations).map((x) => x.reason);
  const rootish = { securityContext: { runAsUser: 0 }, containers: [{ name: 'a', ...RESTRICTED_OK }] };
  assert.deepEqual(details(rootish, Infinity), ['runAsUser=0']);
  assert.deepEqual(details(rootish, 22), [], 'runAsUser is checked from v1.23');
  // Before v1.22 the baseline capabilities check stands at restricted; before v1.19 seccomp is the annotations.
  const old = { containers: [{ name: 'a', securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { add: ['SYS_ADMIN'] } } }] };
  assert.deepEqual(details(old, 21), ['non-default capabilities', 'seccompProfile']);
  assert.deepEqual(podSecurityFailures(old, 'restricted', 18, { 'seccomp.security.alpha.kubernetes.io/pod': 'unconfined' }).map((x) => x.detail), [
    'container "a" must not include "SYS_ADMIN" in securityContext.capabilities.add',
    'forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined"',
  ]);
  assert.deepEqual(details({ containers: [{ name: 'a', securityContext: { runAsNonRoot: true } }] }, 7), [], 'allowPrivilegeEscalation is checked from v1.8');
  // From v1.25 a Windows pod is exempt from the Linux-only restricted checks.
  const windows = { os: { name: 'windows' }, containers: [{ name: 'a', securityContext: { runAsNonRoot: true } }] };
  assert.deepEqual(details(windows, Infinity), []);
  assert.deepEqual(details(windows, 24), ['allowPrivilegeEscalation != false', 'unrestricted capabilities', 'seccompProfile']);
});

test('labels: bad enforce level is restricted, bad version latest, warn follows enforce unless set', () => {
  const p = (labels: Record<string, string>) => {
    const x = namespacePolicy({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n', labels } });
    return `${x.enforce.level}:${x.enforce.version} ${x.warn.level}:${x.warn.version} ${x.audit.level}:${x.audit.version}`;
  };
  const L = 'pod-security.kubernetes.io/';
  assert.equal(p({}), 'privileged:latest privileged:latest privileged:latest');
  assert.equal(p({ [`${L}enforce`]: 'bogus', [`${L}enforce-version`]: 'v1.022' }), 'restricted:latest privileged:latest privileged:latest');
  assert.equal(p({ [`${L}enforce`]: 'baseline', [`${L}enforce-version`]: 'v1.24' }), 'baseline:v1.24 baseline:v1.24 privileged:latest');
  assert.equal(p({ [`${L}enforce`]: 'baseline', [`${L}warn-version`]: 'v1.29' }), 'baseline:latest baseline:v1.29 privileged:latest');
  assert.equal(p({ [`${L}enforce`]: 'baseline', [`${L}warn`]: 'privileged', [`${L}audit`]: 'nope' }), 'baseline:latest privileged:latest privileged:latest');
});
