// Pod Security Admission from namespace labels, with the plugin's own messages: a direct pod
// create is a 403, a workload's refused pods are a FailedCreate event (and, for Deployments,
// the ReplicaFailure condition), baseline refuses only what baseline forbids, and a pod built
// as krane's hardening builds them is admitted at restricted.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { podSecurityFailures } from '../../src/kube-sim/pod-security';
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

async function create(body: unknown): Promise<{ status: number; body: any }> {
  const ns = (body as { metadata: { namespace: string } }).metadata.namespace;
  const r = await f.fetch(`${f.url}/api/v1/namespaces/${ns}/pods`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
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
    'hostPath volumes (volume "h")',
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
