// A sentinel whose apply Kubernetes refused (issue 23): krane reports the refusal, and the
// SentinelService.Deploy waiting on it fails within seconds with that reason instead of waiting
// out its timeout, and so do the deploy and the rollout wave behind it. The refusal is a real
// one: a ResourceQuota in the sentinel namespace that allows no Deployments, enforced by the
// simulator's admission as an API server does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { KubeClient } from '../../src/kube/client';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';

// The production timeout: the point is that nobody waits for it.
const stack = await testStack({ regions: ['us-east-1'], ctrl: { settings: { sentinelTimeout: '10m' } } });
const kube = new KubeClient(stack.regions.get('us-east-1')!.sim.sim.kubeConfig());

test('a refused sentinel apply fails its Deploy, the deploy and a rollout wave within seconds, with the reason', async () => {
  await until(async () => !!(await kube.get({ apiVersion: 'v1', kind: 'Namespace', name: SENTINEL_NAMESPACE } as never)), 15_000, 'sentinel namespace');
  await kube.apply({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'no-deployments', namespace: SENTINEL_NAMESPACE }, spec: { hard: { 'count/deployments.apps': '0' } } } as never);

  // The sentinel timeout is 10 minutes: ending within the waits here means the refusal ended it.
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const d = await until(async () => {
    const x = (await stack.api(`/v1/deployments/${created.body.id}`)).body;
    return ['failed', 'ready'].includes(x.status) ? x : undefined;
  }, 20_000, 'deploy ended');
  assert.equal(d.status, 'failed');
  assert.match(d.error, /sentinel .* not ready: .*exceeded quota: no-deployments/);

  const sentinelId = (await stack.api('/v1/sentinels?region=us-east-1')).body.sentinels[0].id;
  const again = await stack.api(`/v1/sentinels/${sentinelId}/deploy`, { body: { image: 'ghcr.io/unkeyed/sentinel:v3' } });
  assert.equal(again.body.status, 'FAILED', JSON.stringify(again.body));
  assert.match(again.body.reason, /ERR_KUBE_FORBIDDEN: .*exceeded quota/);

  const r = await stack.api('/v1/sentinel-rollouts', { body: { image: 'ghcr.io/unkeyed/sentinel:v4', wavePercentages: [100] } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const rollout = await until(async () => {
    const c = (await stack.api('/v1/sentinel-rollouts/current')).body;
    return ['paused', 'completed'].includes(c.state) ? c : undefined;
  }, 10_000, 'rollout wave ended');
  assert.equal(rollout.state, 'paused', JSON.stringify(rollout));
  assert.deepEqual(rollout.failedIds, [sentinelId]);
});
