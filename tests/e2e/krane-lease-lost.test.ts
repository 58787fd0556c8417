// A krane that loses its Lease shuts down, and in production its pod's restart policy starts it
// again (src/main.ts exits). In the embedded stack (`dev`, these tests) the stack is that
// supervisor. Without it, one pause of the process past the renew deadline (a laptop asleep, a
// stalled CI machine) left the region without an agent for good and every deploy to it hung.
// Here another holder takes the Lease, which is what krane finds after such a pause.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { deploymentsOf, testStack, until } from '../helpers/stack';
import { LEASE_NAMESPACE, leaseName } from '../../src/kube/leader';

const stack = await testStack({ regions: ['us-east-1'], krane: { tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500, heartbeatMs: 200 } } });
const region = stack.regions.get('us-east-1')!;
const deployments = deploymentsOf(stack, ['us-east-1']);

test('a krane whose Lease is taken shuts down and the stack starts it again; deploys converge after', async () => {
  await deployments.status(await deployments.create(), ['ready']);
  const first = region.krane;
  const leases = region.sim.sim.kubeConfig().makeApiClient(CoordinationV1Api);
  const name = leaseName('us-east-1');
  const leader = (await leases.readNamespacedLease({ name, namespace: LEASE_NAMESPACE })).spec!.holderIdentity;
  // Another holder renews the Lease every second, as a replica that took over would, until
  // the stack has started krane again; then it lets go, so the new krane need not wait it out.
  const hold = async (holderIdentity: string) => {
    const lease = await leases.readNamespacedLease({ name, namespace: LEASE_NAMESPACE });
    await leases.replaceNamespacedLease({ name, namespace: LEASE_NAMESPACE, body: { ...lease, spec: { ...lease.spec, holderIdentity, renewTime: new Date() } } }).catch(() => {});
  };
  // The old krane misses its renew deadline (7 s), steps down and is replaced by a new process.
  await until(async () => {
    if (region.krane !== first) return true;
    await hold('another-replica');
    await new Promise((r) => setTimeout(r, 1000));
    return false;
  }, 20_000, 'krane started again');
  await hold('');
  const view = await until(async () => {
    const r = (await stack.api('/v1/regions')).body[0];
    return r.status === 'online' && r.agent.leader && r.agent.id !== leader ? r : undefined;
  }, 20_000, 'a new agent leading');
  assert.notEqual(view.agent.id, leader);
  const again = await leases.readNamespacedLease({ name, namespace: LEASE_NAMESPACE });
  assert.equal(again.spec!.holderIdentity, view.agent.id, 'the new agent holds the Lease');
  const d = await deployments.status(await deployments.create(), ['ready', 'failed']);
  assert.equal(d.status, 'ready', JSON.stringify(d));
});
