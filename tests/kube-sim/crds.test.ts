// CRDs are real: without Cilium's CustomResourceDefinition the cilium.io group is not in
// discovery and its resource 404s (as `kube-sim --no-cilium` serves it); installing the CRD
// serves it (Established), validation is the published Cilium schema, and deleting the CRD
// deletes its objects and stops serving it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CILIUM_POLICY_CRD, mustResourceForKind } from '../../src/kube-sim';
import { startKubeSim } from '../../src/modes/kube-sim';
import { startSim, waitFor } from './helpers';

const CNP_PATH = '/apis/cilium.io/v2/namespaces/default/ciliumnetworkpolicies';
const policy = (name: string, port: unknown = '7946') => ({
  apiVersion: 'cilium.io/v2',
  kind: 'CiliumNetworkPolicy',
  metadata: { name, namespace: 'default' },
  spec: { endpointSelector: { matchLabels: { app: 'sentinel' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'sentinel' } }], toPorts: [{ ports: [{ port, protocol: 'TCP' }] }] }] },
});

test('without the Cilium CRD: no cilium.io in discovery, and the resource 404s', async () => {
  const f = await startSim({ cilium: false });
  try {
    const groups = ((await (await f.fetch(`${f.url}/apis`)).json()) as any).groups.map((g: any) => g.name);
    assert.ok(!groups.includes('cilium.io'));
    assert.equal((await f.fetch(`${f.url}/apis/cilium.io/v2`)).status, 404);
    const r = await f.fetch(`${f.url}${CNP_PATH}`);
    assert.equal(r.status, 404);
    assert.deepEqual(await r.json(), { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the server could not find the requested resource', reason: 'NotFound', details: {}, code: 404 });
    // The unchanged client finds no such kind.
    await assert.rejects(f.objects.create(policy('p') as any));

    // Installing the CRD serves it; the CRD reports Established.
    await f.objects.create(structuredClone(CILIUM_POLICY_CRD) as any);
    const crd = await waitFor('Established', async () => {
      const o = (await (await f.fetch(`${f.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ciliumnetworkpolicies.cilium.io`)).json()) as any;
      return o.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True') ? o : undefined;
    });
    assert.equal(crd.status.acceptedNames.kind, 'CiliumNetworkPolicy');
    const created = await f.fetch(`${f.url}${CNP_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(policy('p')) });
    assert.equal(created.status, 201);
    // Validated by the published schema: a numeric port is not the CRD's string.
    const bad = await f.fetch(`${f.url}${CNP_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(policy('q', 7946)) });
    assert.equal(bad.status, 422);
    assert.ok(((await bad.json()) as any).details.causes.some((c: any) => c.field === 'spec.ingress[0].toPorts[0].ports[0].port'));

    // Deleting the CRD deletes its objects and the resource 404s again.
    await f.fetch(`${f.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ciliumnetworkpolicies.cilium.io`, { method: 'DELETE' });
    await waitFor('policies removed', () => f.sim.store.list(mustResourceForKind('cilium.io/v2', 'CiliumNetworkPolicy'), undefined).length === 0 || undefined);
    assert.equal((await f.fetch(`${f.url}${CNP_PATH}`)).status, 404);
  } finally {
    await f.close();
  }
});

test('kube-sim --no-cilium starts a cluster without the CRD; by default it has it', async () => {
  const without = await startKubeSim({ port: 0, host: '127.0.0.1', readyDelay: 5, logLevel: 'silent', noCilium: true });
  const withIt = await startKubeSim({ port: 0, host: '127.0.0.1', readyDelay: 5, logLevel: 'silent', noCilium: false });
  try {
    const kc = (h: typeof without) => fetch(`${h.url}${CNP_PATH}`, { headers: { authorization: 'Bearer kube-sim-token' } });
    assert.equal((await kc(without)).status, 404);
    assert.equal((await kc(withIt)).status, 200);
  } finally {
    await without.close();
    await withIt.close();
  }
});
