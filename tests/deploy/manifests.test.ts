// The install manifests (deploy/krane.yaml, deploy/ctrl.yaml, deploy/krane-rbac.yaml) with the
// same care as the code: validated against the official schemas (kubernetes-models), pods that
// meet the `restricted` Pod Security Standard, krane's RBAC checked against every API call krane
// makes (and refusing what it must not do), and the real `kubectl apply --server-side
// --dry-run=server` against kube-sim.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAll, dump } from 'js-yaml';
import { KubeSim, DEFAULT_SIM_OPTIONS, SIM_TOKEN } from '../../src/kube-sim';
import { kubectlFor } from '../kube/kubectl';
import { restrictedViolations, validateManifest } from '../helpers/manifests';
import { KRANE_API_CALLS, allowed, FORBIDDEN_CALLS, type Rule } from './rbac';

type Doc = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [k: string]: any };
const read = (f: string) => (loadAll(readFileSync(join('deploy', f), 'utf8')) as Doc[]).filter(Boolean);
const files = ['krane-rbac.yaml', 'krane.yaml', 'ctrl.yaml'];
const find = (docs: Doc[], kind: string, name: string) => {
  const d = docs.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(d, `${kind} ${name}`);
  return d;
};

test('every install manifest validates against the official schemas', () => {
  for (const f of files) {
    for (const d of read(f)) {
      validateManifest(d, f);
    }
  }
});

/** The `restricted` Pod Security Standard for a pod template, and resources on every container. */
function assertRestricted(where: string, pod: any): void {
  assert.deepEqual(restrictedViolations(pod, { resources: true }), [], where);
}

const secretEnv = (c: any, name: string) => c.env.find((e: any) => e.name === name)?.valueFrom?.secretKeyRef;
const envValue = (c: any, name: string) => c.env.find((e: any) => e.name === name)?.value;

test('krane.yaml: two replicas electing a leader as the ServiceAccount krane, probes on its health port, secrets from Secrets', () => {
  const docs = [...read('krane-rbac.yaml'), ...read('krane.yaml')];
  const d = find(docs, 'Deployment', 'krane');
  assert.equal(d.spec.replicas, 2);
  assert.equal(d.spec.strategy.rollingUpdate.maxUnavailable, 0, 'a rollout never leaves the region without an agent');
  const pod = d.spec.template.spec;
  assert.equal(pod.serviceAccountName, 'krane');
  assert.ok(find(docs, 'ServiceAccount', 'krane'));
  assertRestricted('krane', pod);
  const c = pod.containers[0];
  assert.deepEqual(c.args, ['krane']);
  assert.notEqual(envValue(c, 'UNKEY_INFRA_LEADER_ELECT'), 'false', 'leader election stays on');
  assert.deepEqual(secretEnv(c, 'UNKEY_INFRA_TOKEN'), { name: 'krane-agent', key: 'token' });
  const health = c.ports.find((p: any) => p.name === 'health');
  assert.equal(envValue(c, 'UNKEY_INFRA_LISTEN'), `0.0.0.0:${health.containerPort}`);
  assert.deepEqual([c.livenessProbe.httpGet.path, c.livenessProbe.httpGet.port], ['/livez', 'health']);
  assert.deepEqual([c.readinessProbe.httpGet.path, c.readinessProbe.httpGet.port], ['/readyz', 'health']);
  // The credentials file krane reads is a mounted Secret; nothing of it is in an env var.
  const file = envValue(c, 'UNKEY_INFRA_SENTINEL_SECRETS_FILE');
  const mount = c.volumeMounts.find((m: any) => file.startsWith(`${m.mountPath}/`));
  assert.ok(mount, 'the credentials file is on a mounted volume');
  assert.equal(pod.volumes.find((v: any) => v.name === mount.name).secret.secretName, 'krane-sentinel-credentials');
});

test('ctrl.yaml: two replicas behind a Service, migrations first, secrets from a Secret, probes and resources', () => {
  const docs = read('ctrl.yaml');
  const d = find(docs, 'Deployment', 'ctrl');
  assert.equal(d.spec.replicas, 2);
  const pod = d.spec.template.spec;
  assertRestricted('ctrl', pod);
  assert.equal(pod.automountServiceAccountToken, false);
  const [init] = pod.initContainers;
  assert.deepEqual(init.args, ['migrate']);
  assert.deepEqual(secretEnv(init, 'UNKEY_INFRA_DATABASE_URL'), { name: 'ctrl', key: 'database-url' });
  const c = pod.containers[0];
  assert.deepEqual(c.args, ['ctrl']);
  assert.equal(init.image, c.image, 'migrations of the same release');
  assert.deepEqual(secretEnv(c, 'UNKEY_INFRA_DATABASE_URL'), { name: 'ctrl', key: 'database-url' });
  assert.deepEqual(secretEnv(c, 'UNKEY_INFRA_ADMIN_TOKEN'), { name: 'ctrl', key: 'admin-token' });
  assert.equal(envValue(c, 'UNKEY_INFRA_NO_MIGRATE'), 'true');
  assert.deepEqual([c.livenessProbe.httpGet.path, c.readinessProbe.httpGet.path], ['/livez', '/readyz']);
  const svc = find(docs, 'Service', 'ctrl');
  assert.deepEqual(svc.spec.selector, d.spec.selector.matchLabels);
  assert.equal(svc.spec.ports[0].targetPort, c.ports[0].name);
  // krane's default control plane URL names this Service.
  const krane = find(read('krane.yaml'), 'Deployment', 'krane').spec.template.spec.containers[0];
  assert.equal(envValue(krane, 'UNKEY_INFRA_CONTROL_PLANE'), `http://${svc.metadata.name}.${svc.metadata.namespace}.svc.cluster.local:${svc.spec.ports[0].port}`);
  for (const ns of ['unkey-ctrl']) assert.equal(find(docs, 'Namespace', ns).metadata.labels!['pod-security.kubernetes.io/enforce'], 'restricted');
});

test('krane-rbac.yaml grants every API call krane makes, and nothing it must not do', () => {
  const docs = read('krane-rbac.yaml');
  const rules = (ns: string): Rule[] => {
    const bound = docs.some((d) => d.kind === 'RoleBinding' && d.metadata.namespace === ns && d.subjects.some((s: any) => s.kind === 'ServiceAccount' && s.name === 'krane' && s.namespace === 'krane'));
    if (!bound) return [];
    return docs.filter((d) => d.kind === 'Role' && d.metadata.namespace === ns).flatMap((d) => d.rules);
  };
  assert.ok(!docs.some((d) => d.kind === 'ClusterRole' || d.kind === 'ClusterRoleBinding'), 'no cluster-wide grant');
  for (const call of KRANE_API_CALLS) assert.ok(allowed(rules(call.namespace ?? ''), call), `krane needs: ${call.why} (${JSON.stringify(call)})`);
  for (const call of FORBIDDEN_CALLS) assert.ok(!allowed(rules(call.namespace ?? ''), call), `krane must not: ${call.why}`);
});

test('kubectl apply --server-side --dry-run=server accepts the manifests and writes nothing', async (t) => {
  const sim = new KubeSim({ readyDelayMs: 20, namespaces: [...DEFAULT_SIM_OPTIONS.namespaces] });
  await sim.listen(0);
  after(() => sim.close());
  const kubectl = kubectlFor(sim.url);
  // Namespaces first, for real: a dry run creates nothing, so objects in a new namespace would
  // find it missing (a real cluster answers the same).
  const all = files.flatMap(read);
  const dir = mkdtempSync(join(tmpdir(), 'deploy-dry-run-'));
  const write = (name: string, docs: Doc[]) => {
    const p = join(dir, name);
    writeFileSync(p, docs.map((d) => dump(d)).join('---\n'));
    return p;
  };
  await kubectl.ok(['apply', '--server-side', '-f', write('namespaces.yaml', all.filter((d) => d.kind === 'Namespace'))]);
  // Every kind in the manifests must be served (a kind missing here is named in the failure).
  const served = new Set<string>();
  for (const group of ['/api/v1', '/apis/apps/v1', '/apis/rbac.authorization.k8s.io/v1']) {
    const r = await fetch(sim.url + group, { headers: { authorization: `Bearer ${SIM_TOKEN}` } });
    if (r.ok) for (const res of ((await r.json()) as any).resources) served.add(res.kind);
  }
  const docs = all.filter((d) => d.kind !== 'Namespace' && served.has(d.kind));
  const missing = [...new Set(all.filter((d) => !served.has(d.kind)).map((d) => d.kind))];
  assert.deepEqual(missing, [], 'every kind of the install manifests is served');
  assert.ok(docs.some((d) => d.kind === 'Deployment' && d.metadata.name === 'krane') && docs.some((d) => d.kind === 'Deployment' && d.metadata.name === 'ctrl'));
  const out = await kubectl.ok(['apply', '--server-side', '--dry-run=server', '-f', write('objects.yaml', docs)]);
  for (const d of docs) assert.match(out, new RegExp(`${d.metadata.name} serverside-applied \\(server dry run\\)`), `${d.kind} ${d.metadata.name}`);
  const r = await kubectl.run(['get', 'deployment', 'krane', '-n', 'krane']);
  assert.notEqual(r.code, 0, 'a dry run wrote nothing');
  assert.match(r.stderr, /NotFound|not found/);
});
