// deploy/ as a kustomize base and its overlays (ha, restricted-egress, dev): each rendered by
// the real `kubectl kustomize`, every object valid against the official schemas
// (kubernetes-models), the overlay doing what it says, and each server-side applied with the
// real kubectl (`apply --server-side -k`) to a cluster of its own (the simulator), where the
// objects are then read back. The base renders exactly the files applied directly.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Service } from 'kubernetes-models/v1/Service';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { KubeSim, DEFAULT_SIM_OPTIONS } from '../../src/kube-sim';
import { kubectlFor } from '../kube/kubectl';

type Doc = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec?: any };
const models: Record<string, (d: any) => { validate(): void }> = {
  'apps/v1/Deployment': (d) => new Deployment(d),
  'v1/Service': (d) => new Service(d),
  'v1/Namespace': (d) => new Namespace(d),
  'v1/ServiceAccount': (d) => new ServiceAccount(d),
  'rbac.authorization.k8s.io/v1/Role': (d) => new Role(d),
  'rbac.authorization.k8s.io/v1/RoleBinding': (d) => new RoleBinding(d),
  'policy/v1/PodDisruptionBudget': (d) => new PodDisruptionBudget(d),
  'networking.k8s.io/v1/NetworkPolicy': (d) => new NetworkPolicy(d),
};
const OVERLAYS = ['deploy', 'deploy/overlays/ha', 'deploy/overlays/restricted-egress', 'deploy/overlays/dev'];

/** The real kubectl with a private HOME and no cluster: `kubectl kustomize` reads files only. */
function kustomize(dir: string): Promise<Doc[]> {
  const home = mkdtempSync(join(tmpdir(), 'kustomize-'));
  after(() => rmSync(home, { recursive: true, force: true }));
  return new Promise((resolve, reject) =>
    execFile('kubectl', ['kustomize', dir], { env: { PATH: process.env.PATH, HOME: home }, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(new Error(`kubectl kustomize ${dir}: ${stderr || err.message}`)) : resolve((loadAll(stdout) as Doc[]).filter(Boolean)),
    ),
  );
}

const rendered = new Map<string, Doc[]>();
for (const dir of OVERLAYS) rendered.set(dir, await kustomize(dir));
const find = (docs: Doc[], kind: string, name: string, namespace?: string) => {
  const d = docs.find((x) => x.kind === kind && x.metadata.name === name && (namespace === undefined || x.metadata.namespace === namespace));
  assert.ok(d, `${kind} ${namespace ?? ''}/${name}`);
  return d;
};
const key = (d: Doc) => `${d.kind} ${d.metadata.namespace ?? ''}/${d.metadata.name}`;

test('every rendered object of the base and each overlay validates against the official schemas', () => {
  for (const [dir, docs] of rendered) {
    assert.ok(docs.length > 0, dir);
    for (const d of docs) {
      const make = models[`${d.apiVersion}/${d.kind}`];
      assert.ok(make, `${dir}: no schema for ${d.apiVersion}/${d.kind}`);
      make(d).validate();
    }
  }
});

test('the base is exactly the manifests applied directly (deploy/*.yaml)', () => {
  const direct = ['krane-rbac.yaml', 'krane.yaml', 'ctrl.yaml'].flatMap((f) => (loadAll(readFileSync(join('deploy', f), 'utf8')) as Doc[]).filter(Boolean));
  assert.deepEqual(rendered.get('deploy')!.map(key).sort(), direct.map(key).sort());
  for (const d of direct) assert.deepEqual(find(rendered.get('deploy')!, d.kind, d.metadata.name, d.metadata.namespace), d, key(d));
});

test('ha: two replicas of each, never two on a node, spread over zones, a PodDisruptionBudget each', () => {
  const docs = rendered.get('deploy/overlays/ha')!;
  for (const [name, ns] of [['krane', 'krane'], ['ctrl', 'unkey-ctrl']] as const) {
    const d = find(docs, 'Deployment', name, ns);
    assert.equal(d.spec.replicas, 2);
    const [term] = d.spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
    assert.deepEqual([term.topologyKey, term.labelSelector.matchLabels], ['kubernetes.io/hostname', { 'app.kubernetes.io/name': name }]);
    assert.equal(d.spec.template.spec.topologySpreadConstraints[0].topologyKey, 'topology.kubernetes.io/zone');
    const pdb = find(docs, 'PodDisruptionBudget', name, ns);
    assert.equal(pdb.spec.minAvailable, 1);
    assert.deepEqual(pdb.spec.selector.matchLabels, d.spec.selector.matchLabels, 'the budget covers the Deployment\'s pods');
  }
});

test('restricted-egress: every namespace\'s pods are covered by an egress policy', () => {
  const docs = rendered.get('deploy/overlays/restricted-egress')!;
  const egress = docs.filter((d) => d.kind === 'NetworkPolicy' && d.spec.policyTypes.includes('Egress')).map((d) => d.metadata.namespace).sort();
  assert.deepEqual([...new Set(egress)], ['krane', 'sentinel', 'unkey', 'unkey-ctrl']);
  const krane = find(docs, 'NetworkPolicy', 'krane', 'krane');
  assert.deepEqual(krane.spec.podSelector.matchLabels, find(docs, 'Deployment', 'krane').spec.selector.matchLabels);
  const ports = krane.spec.egress.flatMap((e: any) => (e.ports ?? []).map((p: any) => p.port));
  for (const p of [53, 443, 6443, 7070]) assert.ok(ports.includes(p), `krane may reach port ${p}`);
  assert.deepEqual(find(docs, 'NetworkPolicy', 'workloads-egress-public', 'unkey'), (loadAll(readFileSync('deploy/network-policy.yaml', 'utf8')) as Doc[]).find((d) => d?.metadata.name === 'workloads-egress-public'), 'the same policy as deploy/network-policy.yaml');
});

test('dev: one replica of each with debug logs', () => {
  const docs = rendered.get('deploy/overlays/dev')!;
  for (const [name, ns] of [['krane', 'krane'], ['ctrl', 'unkey-ctrl']] as const) {
    const d = find(docs, 'Deployment', name, ns);
    assert.equal(d.spec.replicas, 1);
    const c = d.spec.template.spec.containers.find((x: any) => x.name === name);
    assert.equal(c.env.find((e: any) => e.name === 'UNKEY_INFRA_LOG_LEVEL').value, 'debug');
  }
});

for (const dir of OVERLAYS) {
  test(`kubectl apply --server-side -k ${dir} creates every object in a cluster`, async () => {
    const sim = new KubeSim({ readyDelayMs: 20, namespaces: [...DEFAULT_SIM_OPTIONS.namespaces] });
    await sim.listen(0);
    after(() => sim.close());
    const kubectl = kubectlFor(sim.url);
    const out = await kubectl.ok(['apply', '--server-side', '-k', dir]);
    const docs = rendered.get(dir)!;
    for (const d of docs) assert.match(out, new RegExp(`${d.metadata.name} serverside-applied`), key(d));
    // Read back: every object is there, as the overlay made it.
    for (const d of docs) {
      const got = JSON.parse(await kubectl.ok(['get', d.kind.toLowerCase(), d.metadata.name, ...(d.metadata.namespace ? ['-n', d.metadata.namespace] : []), '-o', 'json']));
      assert.equal(got.metadata.name, d.metadata.name, key(d));
      if (d.spec && d.kind !== 'Namespace') assert.deepEqual(pick(got.spec, d.spec), d.spec, `${key(d)} spec as rendered`);
    }
  });
}

/** The fields of `have` that `want` names (the server adds defaults beside them). */
function pick(have: any, want: any): any {
  if (Array.isArray(want)) return Array.isArray(have) ? want.map((w, i) => pick(have[i], w)) : have;
  if (want && typeof want === 'object') return have && typeof have === 'object' ? Object.fromEntries(Object.keys(want).map((k) => [k, pick(have[k], want[k])])) : have;
  return have;
}
