import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
// A plain YAML parser: client-node's loadAllYaml maps objects onto its classes (`from` becomes
// `_from`), which would validate something other than what kubectl sends.
import { loadAll } from 'js-yaml';
import type { ZodObject } from 'zod';
import { CiliumPolicyApply, DeploymentApply, SentinelApply, type ApplyState } from '../../src/sync/wire';
import { ANNOTATION, buildObjects, LABEL, manifestHash, objectName, type ManifestObject } from '../../src/kube/manifests';
import { deploymentState, policyState, routesState, sentinelState } from './fixtures';
import { validatePublishedCilium } from '../helpers/cilium-schema';
import { restrictedViolations as violations, validateManifest } from '../helpers/manifests';

/** The restricted level, and no service account token (workloads and sentinels need none). */
const restrictedViolations = (pod: unknown) => violations(pod, { noServiceAccountToken: true });

const validate = (o: ManifestObject) => validateManifest(o);

const byKind = (objs: ManifestObject[], kind: string) => objs.find((o) => o.kind === kind) as any;

test('every builder output validates against the official schemas', () => {
  const states: ApplyState[] = [
    deploymentState(),
    deploymentState({ command: [], env: {}, replicas: 0 }),
    sentinelState(),
    policyState(),
    routesState(),
    routesState({ backends: [] }),
  ];
  for (const s of states) {
    for (const o of buildObjects(s, { imagePullSecret: 'regcred' })) validate(o);
    for (const o of buildObjects(s)) validate(o);
  }
  // and an invalid object is caught, so the checks above can fail
  const bad = structuredClone(byKind(buildObjects(deploymentState()), 'StatefulSet'));
  bad.spec.replicas = 'two';
  assert.throws(() => validate(bad));
});

test('deployment: headless service and statefulset as designed', () => {
  const objs = buildObjects(deploymentState(), { imagePullSecret: 'regcred' });
  assert.deepEqual(objs.map((o) => o.kind), ['Service', 'StatefulSet']);
  const svc = byKind(objs, 'Service');
  assert.equal(svc.spec.clusterIP, 'None');
  assert.equal(svc.spec.publishNotReadyAddresses, true);
  assert.deepEqual(svc.spec.selector, { [LABEL.deploymentId]: 'dep-aaaaaaaaaaaaaaaa' });
  const sts = byKind(objs, 'StatefulSet');
  assert.equal(sts.metadata.namespace, 'unkey');
  assert.equal(sts.spec.serviceName, svc.metadata.name);
  assert.equal(sts.spec.template.spec.restartPolicy, 'Always');
  const c = sts.spec.template.spec.containers[0];
  assert.deepEqual(c.resources.requests, { cpu: '250m', memory: '256Mi' });
  assert.deepEqual(c.resources.limits, c.resources.requests);
  assert.deepEqual(sts.spec.template.spec.imagePullSecrets, [{ name: 'regcred' }]);
  assert.equal(byKind(buildObjects(deploymentState()), 'StatefulSet').spec.template.spec.imagePullSecrets, undefined);
  // the template selects what the service selects
  for (const [k, v] of Object.entries(svc.spec.selector)) assert.equal(sts.spec.template.metadata.labels[k], v);
  // user env overrides platform env of the same name, and names are unique (SSA merge key)
  const o2 = byKind(buildObjects(deploymentState({ env: { PORT: '9' } })), 'StatefulSet');
  const env = o2.spec.template.spec.containers[0].env as { name: string; value: string }[];
  assert.equal(env.find((e) => e.name === 'PORT')!.value, '9');
  assert.equal(new Set(env.map((e) => e.name)).size, env.length);
});

test('routes: ConfigMap routes-<env> holds the weights and each backend\'s stable addresses in the workload namespace', () => {
  const s = routesState({ backends: [{ deploymentId: 'dep-old', weight: 90, replicas: 2 }, { deploymentId: 'dep-new', weight: 10, replicas: 1 }, { deploymentId: 'dep-gone', weight: 0, replicas: 0 }] });
  const [cm, ...rest] = buildObjects(s, { workloadNamespace: 'apps' }) as any[];
  assert.equal(rest.length, 0);
  assert.equal(cm.kind, 'ConfigMap');
  assert.equal(cm.metadata.name, 'routes-env-a');
  assert.equal(cm.metadata.namespace, 'sentinel');
  assert.equal(cm.metadata.labels[LABEL.component], 'routes');
  assert.equal(cm.metadata.annotations[ANNOTATION.resource], 'environment_routes/env-a');
  assert.deepEqual(JSON.parse(cm.data['routes.json']), {
    environmentId: 'env-a',
    hostname: 'app-a-production.unkey.app',
    region: 'us-east-1',
    backends: [
      { deploymentId: 'dep-old', weight: 90, addresses: ['dep-old-0.dep-old.apps.svc.cluster.local', 'dep-old-1.dep-old.apps.svc.cluster.local'] },
      { deploymentId: 'dep-new', weight: 10, addresses: ['dep-new-0.dep-new.apps.svc.cluster.local'] },
      { deploymentId: 'dep-gone', weight: 0, addresses: [] },
    ],
  });
  // A weight change is a different manifest (so krane re-applies it), the same one is not.
  const hash = (x: ApplyState) => buildObjects(x)[0]!.metadata.annotations[ANNOTATION.manifestHash];
  assert.equal(hash(s), hash(routesState({ backends: s.backends })));
  assert.notEqual(hash(s), hash(routesState({ backends: s.backends.map((b, i) => ({ ...b, weight: i === 0 ? 80 : i === 1 ? 20 : 0 })) })));
});

test('routes: with ordinals (the pods krane reported Ready) the addresses are those pods\', whatever the replicas (issue 33)', () => {
  const s = routesState({ backends: [{ deploymentId: 'dep-auto', weight: 100, replicas: 1, ordinals: [0, 2, 3] }, { deploymentId: 'dep-starting', weight: 0, replicas: 2, ordinals: [] }] });
  const [cm] = buildObjects(s, { workloadNamespace: 'apps' }) as any[];
  assert.deepEqual(JSON.parse(cm.data['routes.json']).backends, [
    { deploymentId: 'dep-auto', weight: 100, addresses: ['dep-auto-0.dep-auto.apps.svc.cluster.local', 'dep-auto-2.dep-auto.apps.svc.cluster.local', 'dep-auto-3.dep-auto.apps.svc.cluster.local'] },
    { deploymentId: 'dep-starting', weight: 0, addresses: [] },
  ]);
  // A pod joining is a different manifest: krane re-applies the ConfigMap.
  const hash = (x: ApplyState) => buildObjects(x)[0]!.metadata.annotations[ANNOTATION.manifestHash];
  assert.notEqual(hash(s), hash(routesState({ backends: [{ ...s.backends[0]!, ordinals: [0, 2] }, s.backends[1]!] })));
});

test('labels are exactly the contract plus managed-by on every object', () => {
  const expectScope = { [LABEL.workspaceId]: 'ws-a', [LABEL.projectId]: 'prj-a', [LABEL.appId]: 'app-a', [LABEL.environmentId]: 'env-a' };
  const cases: [ApplyState, Record<string, string>][] = [
    [deploymentState(), { [LABEL.component]: 'deployment', [LABEL.deploymentId]: 'dep-aaaaaaaaaaaaaaaa' }],
    [sentinelState(), { [LABEL.component]: 'sentinel', [LABEL.sentinelId]: 'snt-aaaaaaaaaaaaaaaa' }],
    [policyState(), { [LABEL.component]: 'gossip' }],
  ];
  for (const [state, extra] of cases) {
    for (const o of buildObjects(state)) {
      assert.deepEqual(o.metadata.labels, { 'app.kubernetes.io/managed-by': 'krane', ...expectScope, ...extra }, `${o.kind}`);
      assert.equal(o.metadata.annotations[ANNOTATION.manifestHash], manifestHash(o));
    }
  }
});

test('sentinel: rolling update, spread, ports, toleration, the seed\'s probes, PDB', () => {
  const objs = buildObjects(sentinelState());
  assert.deepEqual(objs.map((o) => o.kind).sort(), ['Deployment', 'PodDisruptionBudget', 'Service']);
  const d = byKind(objs, 'Deployment');
  assert.deepEqual(d.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
  assert.equal(d.spec.minReadySeconds, 5);
  const tsc = d.spec.template.spec.topologySpreadConstraints[0];
  assert.equal(tsc.maxSkew, 1);
  assert.equal(tsc.topologyKey, 'topology.kubernetes.io/zone');
  assert.equal(tsc.whenUnsatisfiable, 'ScheduleAnyway');
  assert.deepEqual(d.spec.template.spec.tolerations, [{ key: 'node-class', operator: 'Equal', value: 'sentinel', effect: 'NoSchedule' }]);
  const c = d.spec.template.spec.containers[0];
  assert.deepEqual(
    c.ports.map((p: any) => `${p.containerPort}/${p.protocol}`).sort(),
    ['7946/TCP', '7946/UDP', '8040/TCP'],
  );
  // The image's contract (seed 000): GET /_unkey/internal/health on 8040, two failures.
  for (const p of [c.livenessProbe, c.readinessProbe]) {
    assert.deepEqual(p.httpGet, { path: '/_unkey/internal/health', port: 8040 });
    assert.equal(p.failureThreshold, 2);
  }
  assert.equal(c.envFrom, undefined, 'no credentials Secret configured: none referenced');
  const svc = byKind(objs, 'Service');
  assert.equal(svc.spec.type, 'ClusterIP');
  assert.deepEqual(svc.spec.ports.map((p: any) => p.port), [8040]);
  assert.equal(byKind(objs, 'PodDisruptionBudget').spec.minAvailable, 1);
});

test('sentinel: probe paths and the credentials Secret come from krane\'s settings', () => {
  const d = byKind(buildObjects(sentinelState(), { sentinel: { livenessPath: '/health/live', readinessPath: '/health/ready', credentialsSecret: 'sentinel-credentials' } }), 'Deployment');
  const c = d.spec.template.spec.containers[0];
  assert.equal(c.livenessProbe.httpGet.path, '/health/live');
  assert.equal(c.readinessProbe.httpGet.path, '/health/ready');
  assert.deepEqual(c.envFrom, [{ secretRef: { name: 'sentinel-credentials' } }]);
});

test('gossip: headless service on 7946 and a policy between the environment sentinels', () => {
  const objs = buildObjects(policyState());
  const svc = byKind(objs, 'Service');
  assert.equal(svc.spec.clusterIP, 'None');
  assert.deepEqual(svc.spec.ports.map((p: any) => `${p.port}/${p.protocol}`), ['7946/TCP', '7946/UDP']);
  const cnp = byKind(objs, 'CiliumNetworkPolicy');
  assert.equal(cnp.apiVersion, 'cilium.io/v2');
  const peers = { [LABEL.component]: 'sentinel', [LABEL.environmentId]: 'env-a' };
  assert.deepEqual(cnp.spec.endpointSelector.matchLabels, peers);
  assert.deepEqual(cnp.spec.ingress[0].fromEndpoints[0].matchLabels, peers);
  // the sentinel pods carry exactly the labels the policy and gossip service select on
  const pod = byKind(buildObjects(sentinelState()), 'Deployment').spec.template.metadata.labels;
  for (const [k, v] of Object.entries(peers)) assert.equal(pod[k], v);
});

/** Changes one field to a different valid value of the same type. */
function mutate(v: unknown): unknown {
  if (v === undefined || typeof v === 'boolean') return !v; // an optional flag, absent = false
  if (typeof v === 'string') return `${v}x`;
  if (typeof v === 'number') return v + 1;
  if (Array.isArray(v)) return [...v, 'extra'];
  if (v && typeof v === 'object') return { ...v, EXTRA: 'x' };
  throw new Error(`cannot mutate ${typeof v}`);
}

test('field coverage: every field of every desired-state message reaches the manifests', () => {
  const cases: [ZodObject, ApplyState][] = [
    [DeploymentApply as unknown as ZodObject, deploymentState()],
    [SentinelApply as unknown as ZodObject, sentinelState()],
    [CiliumPolicyApply as unknown as ZodObject, policyState()],
  ];
  for (const [schema, base] of cases) {
    // autoscaling (an object that switches the HPA on) has its own coverage in autoscaler.test.ts;
    // generation only stamps krane's pod reports, and must not reach the manifests (below).
    const fields = Object.keys(schema.shape).filter((k) => k !== 'action' && k !== 'kind' && k !== 'autoscaling' && k !== 'generation');
    assert.ok(fields.length >= 6);
    const before = JSON.stringify(buildObjects(base));
    for (const f of fields) {
      const changed = { ...base, [f]: mutate((base as any)[f]) } as ApplyState;
      schema.parse(changed);
      assert.notEqual(JSON.stringify(buildObjects(changed)), before, `${base.kind}.${f} does not reach the manifests`);
    }
  }
  // A stop and a start move the generation: the objects (and their pods) must stay as they are.
  const d = deploymentState();
  assert.equal(JSON.stringify(buildObjects({ ...d, generation: 7 } as ApplyState)), JSON.stringify(buildObjects(d)));
});

test('object names: ids pass through; anything else maps to a distinct valid name', () => {
  assert.equal(objectName('dep-abc'), 'dep-abc');
  const a = objectName('Dep_ABC');
  const b = objectName('dep-abc_');
  assert.match(a, /^[a-z]([-a-z0-9]*[a-z0-9])?$/);
  assert.notEqual(a, b);
  assert.ok(objectName('x'.repeat(200)).length <= 52);
  assert.match(objectName('123'), /^[a-z]/);
});

// A chosen id shaped like a folded name (`<base>-<hex>`) once got the folded name of another
// environment's id (tests/e2e/attack-object-names.test.ts): distinct ids, with or without a
// prefix, never share a name, whichever of them is folded.
test('object names: two different ids never share a name, folded or not', () => {
  const dns = fc.stringMatching(/^[a-z][-a-z0-9]{0,60}[a-z0-9]$/);
  const anyId = fc.oneof(dns, fc.string({ maxLength: 80 }), dns.map((x) => `${x}-${'0123456789abcdef'.slice(0, 10)}`));
  fc.assert(
    fc.property(anyId, anyId, fc.constantFrom('', 'routes-', 'gossip-'), (a, b, prefix) => {
      const [x, y] = [objectName(a, prefix), objectName(b, prefix)];
      assert.match(x, /^[a-z]([-a-z0-9]*[a-z0-9])?$/);
      assert.ok(x.length <= 52, x);
      if (a !== b) assert.notEqual(x, y, `${a} and ${b}`);
    }),
    { numRuns: 2000 },
  );
  // The fold of an id that takes the shape: not the chosen id's own unfolded name.
  const victim = 'checkout-production-eu-central-1-customer-api-b';
  const folded = objectName(victim, 'routes-');
  assert.notEqual(objectName(folded.slice('routes-'.length), 'routes-'), folded);
});

/** Volume types the `restricted` Pod Security Standard allows. */
const podOf = (objs: ManifestObject[]) => (objs.find((o) => o.kind === 'StatefulSet' || o.kind === 'Deployment') as any).spec.template.spec;

test('workload and sentinel pods meet the restricted Pod Security Standard and mount no token', () => {
  const cases: [string, ApplyState][] = [
    ['workload', deploymentState()],
    ['workload, read-only root', deploymentState({ readOnlyRootFilesystem: true })],
    ['sentinel', sentinelState()],
  ];
  for (const [what, state] of cases) {
    const objs = buildObjects(state, { imagePullSecret: 'regcred' });
    assert.deepEqual(restrictedViolations(podOf(objs)), [], what);
    for (const o of objs) validate(o);
  }
  // The check itself can fail: the pod as it was before hardening.
  const bare = structuredClone(podOf(buildObjects(sentinelState())));
  delete bare.securityContext;
  delete bare.containers[0].securityContext;
  bare.automountServiceAccountToken = undefined;
  assert.ok(restrictedViolations(bare).length >= 5);
});

test('a read-only root filesystem where the workload asks for it (sentinels always), with a writable /tmp', () => {
  const rw = podOf(buildObjects(deploymentState()));
  assert.equal(rw.containers[0].securityContext.readOnlyRootFilesystem, false, 'default: writable, as most images expect');
  assert.equal(rw.volumes, undefined);
  for (const pod of [podOf(buildObjects(deploymentState({ readOnlyRootFilesystem: true }))), podOf(buildObjects(sentinelState()))]) {
    const c = pod.containers[0];
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    const mount = c.volumeMounts.find((m: any) => m.mountPath === '/tmp');
    assert.ok(mount, '/tmp stays writable');
    const vol = pod.volumes.find((v: any) => v.name === mount.name);
    assert.ok(vol.emptyDir.sizeLimit, 'a bounded emptyDir');
  }
});

const deployDocs = () =>
  readdirSync(new URL('../../deploy/', import.meta.url))
    // kustomization.yaml is kustomize's own file, not an object the API server takes.
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) => (loadAll(readFileSync(new URL(`../../deploy/${f}`, import.meta.url), 'utf8')) as any[]).map((d) => ({ file: f, doc: d })));

test('deploy/*.yaml validates against the official schemas; the workload namespaces enforce restricted', () => {
  const docs = deployDocs();
  for (const { file, doc } of docs) validateManifest(doc, file);
  for (const ns of ['unkey', 'sentinel']) {
    const doc = docs.find((d) => d.doc.kind === 'Namespace' && d.doc.metadata.name === ns)?.doc;
    assert.ok(doc, `namespace ${ns}`);
    assert.equal(doc.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted', ns);
  }
});

test('a default NetworkPolicy in unkey admits only sentinels to workloads, so tenants cannot reach each other', () => {
  const policies = deployDocs().filter((d) => d.doc.kind === 'NetworkPolicy' && d.doc.metadata.namespace === 'unkey').map((d) => d.doc);
  const isolation = policies.find((p) => p.spec.policyTypes.includes('Ingress'));
  assert.ok(isolation, 'an ingress policy in unkey');
  assert.deepEqual(isolation.spec.podSelector, {}, 'it selects every workload pod');
  const peers = isolation.spec.ingress.flatMap((r: any) => r.from);
  assert.ok(peers.length > 0);
  for (const peer of peers) {
    // Every admitted peer is a sentinel pod in the sentinel namespace; never a pod of unkey.
    assert.deepEqual(peer.namespaceSelector, { matchLabels: { 'kubernetes.io/metadata.name': 'sentinel' } });
    assert.equal(peer.podSelector.matchLabels[LABEL.component], 'sentinel');
    assert.equal(peer.ipBlock, undefined);
  }
  // Egress: DNS, and the internet but not the cluster's private ranges or the metadata service.
  const egress = policies.find((p) => p.spec.policyTypes.includes('Egress'));
  assert.ok(egress, 'an egress policy in unkey');
  const blocks = egress.spec.egress.flatMap((r: any) => (r.to ?? []).filter((p: any) => p.ipBlock).map((p: any) => p.ipBlock));
  const open = blocks.find((b: any) => b.cidr === '0.0.0.0/0');
  assert.ok(open, 'the internet is reachable');
  for (const cidr of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10']) assert.ok(open.except.includes(cidr), cidr);
});

test('the published Cilium CRD schema itself accepts the builder\'s policy and refuses a malformed one', () => {
  const objs = buildObjects(policyState({ policyId: 'cnp-bad', environmentId: 'env-bad' }) as never);
  const cnp = structuredClone(objs.find((o) => o.kind === 'CiliumNetworkPolicy')) as any;
  validatePublishedCilium(cnp);
  assert.throws(() => validatePublishedCilium({ ...cnp, spec: { ...cnp.spec, endpointSelector: 'everything' } }));
  assert.throws(() => validatePublishedCilium({ ...cnp, spec: { ...cnp.spec, ingress: [{ toPorts: [{ ports: [{ port: 80 }] }] }] } }), 'a port is a string in the CRD');
});
