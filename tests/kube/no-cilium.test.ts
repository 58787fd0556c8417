// A cluster without Cilium (issue 24): the simulator behind a proxy that answers 404 for the
// cilium.io group, as a real API server does when the CRD is not installed. krane still deploys
// sentinels; the gossip policy fails once, as that resource's failure with the reason; it is
// retried at a low rate, not in a loop; and installing the CRD (the proxy lets cilium.io
// through) heals it and clears the failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeClient } from '../../src/kube/client';
import { ApplyOutcomes } from '../../src/kube/outcomes';
import { simKubeConfig } from '../../src/kube-sim';
import { gossipObjectName } from '../../src/kube/manifests';
import { PermanentError, type ApplyReport, type ApplyState, type ResourceRef, type StatusSink } from '../../src/sync/wire';
import { controller, faultProxy, startSim, statusBody, until } from './helpers';
import { policyState, sentinelState } from './fixtures';

const { sim, api: direct } = await startSim(20);
let installed = false;
const proxy = await faultProxy(sim.url, (req) =>
  !installed && req.path.startsWith('/apis/cilium.io') ? { status: 404, body: statusBody(404, 'NotFound', 'the server could not find the requested resource') } : undefined,
);
const api = new KubeClient(simKubeConfig(proxy.url));
const reports: ApplyReport[] = [];
const sink: StatusSink = { instance() {}, sentinel() {}, gc() {}, apply: (r) => void reports.push(r) };
const outcomes = new ApplyOutcomes(sink);
const RETRY_MS = 300;
const ctl = controller(api, 60_000, { kindRetryMs: RETRY_MS, onApplied: (ref, wrote) => outcomes.applied(ref, wrote) });

/** What the change-feed watcher does with one event: apply, and report a permanent refusal. */
async function dispatch(ref: ResourceRef, state: ApplyState): Promise<void> {
  try {
    await ctl.apply(ref, state);
  } catch (err) {
    if (!(err instanceof PermanentError)) throw err;
    outcomes.failedPermanently(ref, err);
  }
}

const sentinelRef: ResourceRef = { type: 'sentinel', id: 'snt-nocilium', region: 'us-east-1' };
const policyRef: ResourceRef = { type: 'cilium_network_policy', id: 'cnp-nocilium', region: 'us-east-1' };
const policy = policyState({ policyId: 'cnp-nocilium' });
const gossip = gossipObjectName(policy.environmentId);
const ciliumRequests = () => proxy.seen.filter((s) => s.path.startsWith('/apis/cilium.io')).length;

test('without the Cilium CRD the sentinel still becomes ready and the policy fails once, with the reason', async () => {
  await dispatch(sentinelRef, sentinelState({ sentinelId: 'snt-nocilium', replicas: 1 }));
  await dispatch(policyRef, policy);
  const ready = await until(async () => {
    const d = (await direct.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'sentinel', name: 'snt-nocilium' })) as any;
    return d?.status?.readyReplicas === 1 ? d : undefined;
  }, 15_000);
  assert.equal(ready.spec.template.spec.containers[0].readinessProbe.httpGet.path, '/_unkey/internal/health');
  // The policy's gossip Service went in; only the CiliumNetworkPolicy could not.
  assert.ok(await direct.get({ apiVersion: 'v1', kind: 'Service', namespace: 'sentinel', name: gossip }), 'the gossip Service exists');
  const failed = reports.filter((r) => r.resource.type === 'cilium_network_policy');
  assert.equal(failed.length, 1);
  assert.equal(failed[0]!.outcome, 'failed');
  assert.equal((failed[0] as any).code, 'ERR_KUBE_KIND_UNAVAILABLE');
  assert.match((failed[0] as any).reason, /cilium\.io\/v2 CiliumNetworkPolicy/);
  assert.equal(ctl.kindWait.size, 1);

  // A full resync applies it again: the same failure is not reported again.
  await dispatch(policyRef, policy);
  assert.equal(reports.filter((r) => r.resource.type === 'cilium_network_policy').length, 1);
});

test('it is retried at a low rate, not in a loop, and installing the CRD heals it', async () => {
  const start = { rounds: ctl.kindWait.rounds, requests: ciliumRequests(), at: Date.now() };
  await until(() => ctl.kindWait.rounds >= start.rounds + 3, 10_000);
  const elapsed = Date.now() - start.at;
  const requests = ciliumRequests() - start.requests;
  // One discovery request per retry round; three rounds took at least three intervals.
  assert.ok(elapsed >= 2 * RETRY_MS, `three rounds in ${elapsed} ms`);
  assert.ok(requests <= 2 * (ctl.kindWait.rounds - start.rounds) + 1, `${requests} requests to cilium.io in ${ctl.kindWait.rounds - start.rounds} rounds`);
  assert.equal(reports.filter((r) => r.resource.type === 'cilium_network_policy').length, 1, 'retries report nothing');

  installed = true;
  await until(() => direct.get({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', namespace: 'sentinel', name: gossip }), 10_000);
  await until(() => reports.some((r) => r.resource.type === 'cilium_network_policy' && r.outcome === 'succeeded'), 10_000);
  assert.equal(ctl.kindWait.size, 0);
  ctl.close();
});
