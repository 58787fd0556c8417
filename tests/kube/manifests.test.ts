import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Service } from 'kubernetes-models/v1/Service';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { ZodObject } from 'zod';
import { CiliumPolicyApply, DeploymentApply, SentinelApply, type ApplyState } from '../../src/sync/wire';
import { ANNOTATION, buildObjects, LABEL, manifestHash, objectName, type ManifestObject } from '../../src/kube/manifests';
import { deploymentState, policyState, sentinelState } from './fixtures';
import { validateCiliumPolicy } from './cilium-schema';

const models: Record<string, (o: object) => { validate(): void }> = {
  'v1/Service': (o) => new Service(o as never),
  'apps/v1/StatefulSet': (o) => new StatefulSet(o as never),
  'apps/v1/Deployment': (o) => new Deployment(o as never),
  'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as never),
};

function validate(o: ManifestObject): void {
  const key = `${o.apiVersion}/${o.kind}`;
  if (key === 'cilium.io/v2/CiliumNetworkPolicy') return validateCiliumPolicy(o);
  const make = models[key];
  assert.ok(make, `no schema for ${key}`);
  make(o).validate();
}

const byKind = (objs: ManifestObject[], kind: string) => objs.find((o) => o.kind === kind) as any;

test('every builder output validates against the official schemas', () => {
  const states: ApplyState[] = [
    deploymentState(),
    deploymentState({ command: [], env: {}, replicas: 0 }),
    sentinelState(),
    policyState(),
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

test('sentinel: rolling update, spread, ports, toleration, separate probes, PDB', () => {
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
  assert.notEqual(c.livenessProbe.httpGet.path, c.readinessProbe.httpGet.path);
  assert.equal(c.readinessProbe.httpGet.port, 8040);
  const svc = byKind(objs, 'Service');
  assert.equal(svc.spec.type, 'ClusterIP');
  assert.deepEqual(svc.spec.ports.map((p: any) => p.port), [8040]);
  assert.equal(byKind(objs, 'PodDisruptionBudget').spec.minAvailable, 1);
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
    const fields = Object.keys(schema.shape).filter((k) => k !== 'action' && k !== 'kind');
    assert.ok(fields.length >= 6);
    const before = JSON.stringify(buildObjects(base));
    for (const f of fields) {
      const changed = { ...base, [f]: mutate((base as any)[f]) } as ApplyState;
      schema.parse(changed);
      assert.notEqual(JSON.stringify(buildObjects(changed)), before, `${base.kind}.${f} does not reach the manifests`);
    }
  }
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
