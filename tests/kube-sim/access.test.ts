// Authentication and RBAC as a real cluster answers them, through the real kubectl: krane's
// ServiceAccount, bound by deploy/krane-rbac.yaml alone, is refused outside its grant with the
// API server's message and allowed inside it; `kubectl auth can-i` answers from
// SelfSubjectAccessReview; an unknown token is 401; a deleted ServiceAccount's token stops
// working; and the rule matching (subresources, resourceNames, nonResourceURLs) is RBAC's.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeconfigYaml, mustResourceForKind, type KubeconfigUser } from '../../src/kube-sim';
import { authorize, type Attributes } from '../../src/kube-sim/rbac';
import { kraneRbacManifests, KUBE_SIM_NAMESPACES } from '../../src/modes/kube-sim';
import { startSim, statefulSet, type SimFixture } from './helpers';

let f: SimFixture;
let dir: string;
let krane: KubeconfigUser;

before(async () => {
  f = await startSim({ namespaces: KUBE_SIM_NAMESPACES });
  f.sim.applyManifests(kraneRbacManifests());
  krane = f.sim.serviceAccountUser('krane', 'krane');
  dir = mkdtempSync(join(tmpdir(), 'kube-sim-access-'));
});
after(async () => {
  await f.close();
  rmSync(dir, { recursive: true, force: true });
});

function kubectlAs(who: KubeconfigUser | undefined, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = mkdtempSync(join(dir, 'home-'));
  const kubeconfig = join(home, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(f.url, 'default', who));
  return new Promise((resolve) => {
    execFile('/usr/bin/kubectl', args, { env: { PATH: process.env.PATH, HOME: home, KUBECONFIG: kubeconfig }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

test("kubectl as krane's ServiceAccount: refused outside deploy/krane-rbac.yaml with the API server's message", async () => {
  const secrets = await kubectlAs(krane, 'get', 'secrets', '-n', 'kube-system');
  assert.notEqual(secrets.code, 0);
  assert.match(
    secrets.stderr,
    /Error from server \(Forbidden\): secrets is forbidden: User "system:serviceaccount:krane:krane" cannot list resource "secrets" in API group "" in the namespace "kube-system"/,
  );
  const nodes = await kubectlAs(krane, 'get', 'namespaces');
  assert.match(nodes.stderr, /namespaces is forbidden: User "system:serviceaccount:krane:krane" cannot list resource "namespaces" in API group "" at the cluster scope/);
  // krane may read and apply StatefulSets but not touch their scale subresource.
  f.sim.applyManifests([{ ...statefulSet('web', 'nginx:1', 1), metadata: { name: 'web', namespace: 'unkey' } }]);
  const scale = await kubectlAs(krane, 'scale', 'statefulset', 'web', '-n', 'unkey', '--replicas=2');
  assert.notEqual(scale.code, 0);
  assert.match(scale.stderr, /statefulsets.apps "web" is forbidden: User "system:serviceaccount:krane:krane" cannot (patch|update) resource "statefulsets\/scale" in API group "apps" in the namespace "unkey"/);
});

test("kubectl as krane's ServiceAccount: allowed inside the grant", async () => {
  const sts = await kubectlAs(krane, 'get', 'statefulsets', '-n', 'unkey');
  assert.equal(sts.code, 0, sts.stderr);
  const cm = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'routes-env1', namespace: 'sentinel' },
    data: { 'routes.json': '{}' },
  };
  const file = join(dir, 'cm.json');
  writeFileSync(file, JSON.stringify(cm));
  const applied = await kubectlAs(krane, 'apply', '--server-side', '--field-manager=krane', '-f', file);
  assert.equal(applied.code, 0, applied.stderr);
  assert.match(applied.stdout, /configmap\/routes-env1 serverside-applied/);
  // The same apply in a namespace with no grant: refused as the create it would be.
  writeFileSync(file, JSON.stringify({ ...cm, metadata: { ...cm.metadata, namespace: 'default' } }));
  const elsewhere = await kubectlAs(krane, 'apply', '--server-side', '--field-manager=krane', '-f', file);
  assert.notEqual(elsewhere.code, 0);
  assert.match(elsewhere.stderr, /configmaps "routes-env1" is forbidden: User "system:serviceaccount:krane:krane" cannot patch resource "configmaps" in API group "" in the namespace "default"/);
});

test('kubectl auth can-i answers from SelfSubjectAccessReview', async () => {
  const yes = await kubectlAs(krane, 'auth', 'can-i', 'create', 'statefulsets.apps', '-n', 'unkey');
  assert.equal(yes.code, 0, yes.stderr);
  assert.equal(yes.stdout.trim(), 'yes');
  const lease = await kubectlAs(krane, 'auth', 'can-i', 'update', 'leases.coordination.k8s.io', '-n', 'unkey');
  assert.equal(lease.stdout.trim(), 'yes');
  const no = await kubectlAs(krane, 'auth', 'can-i', 'list', 'secrets', '-n', 'kube-system');
  assert.equal(no.code, 1);
  assert.equal(no.stdout.trim(), 'no');
  const admin = await kubectlAs(undefined, 'auth', 'can-i', 'delete', 'nodes');
  assert.equal(admin.stdout.trim(), 'yes');
});

test('401 for an unknown token, anonymous is forbidden, and a deleted ServiceAccount loses its token', async () => {
  const bad = await f.fetch(`${f.url}/api/v1/namespaces`, { headers: { authorization: 'Bearer not-a-token' } });
  assert.equal(bad.status, 401);
  assert.deepEqual(await bad.json(), { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
  const anonymous = await fetch(`${f.url}/api/v1/namespaces`);
  assert.equal(anonymous.status, 403);
  assert.equal(((await anonymous.json()) as { message: string }).message, 'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope');
  // system:public-info-viewer lets anyone read /version and health; discovery needs a login.
  assert.equal((await fetch(`${f.url}/version`)).status, 200);
  const apis = await fetch(`${f.url}/apis`);
  assert.equal(apis.status, 403);
  assert.equal(((await apis.json()) as { message: string }).message, 'forbidden: User "system:anonymous" cannot get path "/apis"');
});

test('RBAC rule matching: subresources, */subresource, resourceNames, nonResourceURLs', () => {
  const store = f.sim.store;
  f.sim.applyManifests([
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'reader', namespace: 'default' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'reader', namespace: 'default' },
      rules: [
        { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['*/scale'], verbs: ['update'] },
        { apiGroups: [''], resources: ['configmaps'], resourceNames: ['one'], verbs: ['get'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'reader', namespace: 'default' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'default' }],
    },
  ]);
  const user = { name: 'system:serviceaccount:default:reader', groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'] };
  const a = (x: Partial<Attributes>): Attributes => ({ verb: 'get', resourceRequest: true, path: '', apiGroup: '', apiVersion: 'v1', resource: '', subresource: '', namespace: 'default', name: '', ...x });
  const allowed = (x: Partial<Attributes>) => authorize(store, user, a(x)).allowed;
  assert.equal(allowed({ resource: 'pods', subresource: 'log', name: 'p' }), true);
  assert.equal(allowed({ resource: 'pods', name: 'p' }), false, 'pods/log does not grant pods');
  assert.equal(allowed({ apiGroup: 'apps', resource: 'statefulsets', subresource: 'scale', verb: 'update', name: 's' }), true);
  assert.equal(allowed({ apiGroup: 'apps', resource: 'statefulsets', verb: 'update', name: 's' }), false);
  assert.equal(allowed({ resource: 'configmaps', name: 'one' }), true);
  assert.equal(allowed({ resource: 'configmaps', name: 'two' }), false);
  assert.equal(allowed({ resource: 'configmaps', verb: 'list' }), false, 'resourceNames cannot grant a list');
  assert.equal(allowed({ resource: 'pods', subresource: 'log', name: 'p', namespace: 'kube-system' }), false);
  const path = (p: string) => authorize(store, user, a({ resourceRequest: false, path: p, namespace: '' })).allowed;
  assert.equal(path('/apis/apps/v1'), true, 'system:discovery');
  assert.equal(path('/metrics'), false);
  assert.match(authorize(store, user, a({ resource: 'configmaps', name: 'one' })).reason, /^RBAC: allowed by RoleBinding "reader\/default" of Role "reader" to ServiceAccount "default\/reader"$/);
});

test('a deleted ServiceAccount token stops authenticating', async () => {
  f.sim.applyManifests([{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'short-lived', namespace: 'default' } }]);
  const who = f.sim.serviceAccountUser('default', 'short-lived');
  const before = await fetch(`${f.url}/apis`, { headers: { authorization: `Bearer ${who.token}` } });
  assert.equal(before.status, 200);
  f.sim.api.delete(mustResourceForKind('v1', 'ServiceAccount'), 'default', 'short-lived');
  const afterDelete = await fetch(`${f.url}/apis`, { headers: { authorization: `Bearer ${who.token}` } });
  assert.equal(afterDelete.status, 401);
});
