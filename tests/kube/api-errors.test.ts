// How krane's controller treats the API server's refusals, answered by a fault proxy in front of
// the simulator the way a real API server answers them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until, within } from '../helpers/wait';
import { PermanentError, RetryLaterError, type ResourceRef } from '../../src/sync/wire';
import { KubeClient } from '../../src/kube/client';
import { simKubeConfig } from '../../src/kube-sim';
import { controller, faultProxy, startSim, statusBody, type FaultAnswer } from './helpers';
import { deploymentState } from './fixtures';

const { sim } = await startSim();
const depRef = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });

/** A controller whose PATCHes of StatefulSet `name` get `answer`; everything else reaches the sim. */
async function refusing(name: string, answer: FaultAnswer) {
  const proxy = await faultProxy(sim.url, (r) => (r.method === 'PATCH' && r.path.includes(`/statefulsets/${name}`) ? answer : undefined));
  return controller(new KubeClient(simKubeConfig(proxy.url)));
}

const permanent: [string, FaultAnswer][] = [
  ['422 invalid (not an immutable field)', { status: 422, body: { ...statusBody(422, 'Invalid', 'StatefulSet.apps "x" is invalid: spec.template.spec.containers[0].image: Required value'), details: { causes: [{ reason: 'FieldValueRequired', field: 'spec.template.spec.containers[0].image', message: 'Required value' }] } } }],
  ['403 exceeded quota', { status: 403, body: statusBody(403, 'Forbidden', 'statefulsets.apps "x" is forbidden: exceeded quota: compute, requested: limits.cpu=2, used: limits.cpu=9, limited: limits.cpu=10') }],
  ['403 admission webhook denial', { status: 403, body: statusBody(403, 'Forbidden', 'admission webhook "policy.example.com" denied the request: privileged') }],
  ['413 request entity too large', { status: 413, body: statusBody(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728') }],
  ['500 etcdserver: request is too large', { status: 500, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'etcdserver: request is too large', code: 500 } }],
];

for (const [name, answer] of permanent) {
  test(`${name} is a permanent failure of that object`, async () => {
    const id = `dep-perm-${answer.status}-${permanent.findIndex(([n]) => n === name)}`;
    const ctl = await refusing(id, answer);
    await assert.rejects(ctl.apply(depRef(id), deploymentState({ deploymentId: id })), (err: unknown) => {
      assert.ok(err instanceof PermanentError, `${String(err)}`);
      return true;
    });
  });
}

test('a request the API server never answers is given up after the request timeout, as a retryable failure', async () => {
  // The StatefulSet's PATCH is read and never answered (a black-holed API server); discovery
  // and the rest reach the simulator. Without a limit the apply never settled, and krane's
  // feed (which waits for its applies) stopped for good.
  const proxy = await faultProxy(sim.url, (r) => (r.method === 'PATCH' && r.path.includes('/statefulsets/dep-silent') ? 'hang' : undefined));
  // The limit applies to every request: the inventory's lists go first (retried until one fits),
  // so that on a loaded machine a slow list is not what the apply gives up on.
  const ctl = controller(new KubeClient(simKubeConfig(proxy.url), { requestTimeoutMs: 2_000 }));
  await until(() => ctl.inventory.ensureFresh().then(() => true, () => false), { what: 'a fresh inventory' });
  // Settling at all is the claim (it never did): within() fails it at the safety net otherwise.
  await assert.rejects(within(ctl.apply(depRef('dep-silent'), deploymentState({ deploymentId: 'dep-silent' })), 'the apply given up'), (err: unknown) => {
    assert.ok(err instanceof RetryLaterError, `a timeout is worth retrying: ${String(err)}`);
    assert.match(String(err), /no answer from the API server within the request timeout/);
    return true;
  });
  // The proxy may read the abandoned request after the client gave up on it (a loaded machine).
  await until(() => proxy.seen.some((r) => r.answered === 'hang'), { what: 'the PATCH itself was the request given up', show: () => proxy.seen });
});
