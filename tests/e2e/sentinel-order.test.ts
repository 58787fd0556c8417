// Sentinel reports after a krane takeover (issue 33, defect 10), on the whole stack. A report of
// the previous krane of a region, held on a slow link, lands after the new leader has reported:
// it says one of two replicas is available, and its stamp is a wall clock ahead of the new
// leader's. Ordered by wall clocks it overwrote the newer state; the new leader, which saw
// nothing change, had nothing more to report, and the next deploy of the environment waited on
// that sentinel for good: the row `progressing` with availableReplicas 1, as in the lead's one
// failed baseline run of tests/e2e/lifecycle-instances.test.ts. Ordered by { leaseEpoch, seq },
// the late report of the older epoch is ignored. The order of events is made, not waited for:
// the takeover is complete (the Lease names the new krane) before the late report is sent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { testStack, until, deploymentsOf } from '../helpers/stack';
import { leaseName, LEASE_NAMESPACE } from '../../src/kube/leader';

const REGION = 'eu-west-1';
const stack = await testStack();
const { create, status } = deploymentsOf(stack, ['us-east-1', REGION]);
const leases = stack.regions.get(REGION)!.sim.sim.kubeConfig().makeApiClient(CoordinationV1Api);
const lease = () => leases.readNamespacedLease({ name: leaseName(REGION), namespace: LEASE_NAMESPACE });

test('a late report of the previous krane, stamped by a clock ahead, cannot hold a sentinel back', async () => {
  const first = await create();
  await status(first, ['ready']);
  const before = await lease();
  const oldEpoch = before.spec?.leaseTransitions ?? 0;
  await stack.restartKrane(REGION);
  // The takeover is done: the Lease names another krane, one transition on.
  await until(async () => {
    const l = await lease();
    return l.spec?.holderIdentity && l.spec.holderIdentity !== before.spec?.holderIdentity && (l.spec.leaseTransitions ?? 0) > oldEpoch;
  }, 15_000, 'the new krane leads');
  const [row] = await stack.db.sql<{ id: string; image: string; observedGeneration: number }[]>`
    SELECT id, image, observed_generation::int AS observed_generation FROM sentinels WHERE region = ${REGION}`;
  // The old leader's report: one replica of two available, its clock 59 s ahead (within the
  // minute ctrl accepts for display).
  const late = await fetch(`${stack.ctrl.url}/v1/cluster/sentinels/status`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.regions.get(REGION)!.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      region: REGION,
      sentinels: [{ sentinelId: row!.id, availableReplicas: 1, updatedReplicas: 1, readyReplicas: 1, observedGeneration: row!.observedGeneration, runningImage: row!.image, health: 'unknown', specHash: null, leaseEpoch: oldEpoch, seq: 1_000_000, observedAt: Date.now() + 59_000 }],
    }),
  });
  assert.equal(late.status, 200, await late.text());
  // The next deploy of the environment needs that sentinel converged.
  const second = await create();
  const d = await status(second, ['ready', 'failed']);
  assert.equal(d.status, 'ready', d.error);
  const [after] = await stack.db.sql<{ deployStatus: string; availableReplicas: number }[]>`SELECT deploy_status, available_replicas FROM sentinels WHERE id = ${row!.id}`;
  assert.deepEqual([after!.deployStatus, after!.availableReplicas], ['ready', 2]);
});
