// The series deploy/prometheus/alerts.yaml reads, added for it, take the values its alerts
// expect on a running stack (the rules themselves are unit-tested by promtool on synthetic
// series in tests/deploy/alerts.test.ts): a krane that leads says so, a refused desired state
// shows per region until an apply clears it, and a paused fleet rollout shows as paused with
// its failed sentinels counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { newId } from '../../src/ids';
import { applyFailures, cilium, sentinels, tenancy, withTx } from '../../src/store';

// A crash-looping sentinel fails its deploy after sentinelTimeout: 2 s keeps the wave short.
const stack = await testStack({ regions: ['us-east-1'], ctrl: { settings: { sentinelTimeout: '2s' } } });
const scrape = async (url: string) => (await fetch(`${url}/metrics`)).text();
const value = (text: string, series: RegExp) => Number(new RegExp(`^${series.source}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
/** The sample of `name` whose labels include `labels` (in any order). */
const sample = (text: string, name: string, labels: Record<string, string>) => {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return NaN;
};

test('krane_leader is 1 once the krane leads its region', async () => {
  await until(async () => value(await scrape(stack.regions.get('us-east-1')!.krane.url), /krane_leader/) === 1, 15_000, 'krane_leader 1');
});

test('unkey_region_apply_failures counts a refused desired state until an apply clears it', async () => {
  const failures = async () => sample(await scrape(stack.ctrl.url), 'unkey_region_apply_failures', { region: 'us-east-1' });
  assert.equal(await failures(), 0);
  await applyFailures.recordApplyOutcomes(stack.db.sql, 'us-east-1', [{ resourceType: 'cilium_network_policy', resourceId: 'cnp-x', outcome: 'failed', code: 'ERR_KUBE_KIND_UNAVAILABLE', reason: 'no CRD' }]);
  // The region gauges share one read per second between scrapes: the next read sees it.
  await until(async () => (await failures()) === 1, 10_000, 'one refusal counted');
  await applyFailures.recordApplyOutcomes(stack.db.sql, 'us-east-1', [{ resourceType: 'cilium_network_policy', resourceId: 'cnp-x', outcome: 'succeeded' }]);
  await until(async () => (await failures()) === 0, 10_000, 'the refusal cleared');
});

test('a paused rollout reads unkey_rollout_state{state="paused"} 1, with its failed sentinels counted', async () => {
  await withTx(stack.db.sql, async (tx) => {
    for (let i = 0; i < 2; i++) {
      const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
      await tenancy.insertEnvironment(tx, { ...scope, slug: `alerts${i}` });
      await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: 'us-east-1', image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
      await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region: 'us-east-1' });
    }
  });
  const before = await scrape(stack.ctrl.url);
  assert.equal(sample(before, 'unkey_rollout_state', { state: 'idle' }), 1);
  const r = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:crash-1', wavePercentages: [50, 100] } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await until(async () => (await stack.api('/v1/sentinel-rollouts/current')).body.state === 'paused', 30_000, 'rollout paused');
  const text = await scrape(stack.ctrl.url);
  assert.equal(sample(text, 'unkey_rollout_state', { state: 'paused' }), 1);
  assert.equal(sample(text, 'unkey_rollout_state', { state: 'idle' }), 0);
  assert.ok(sample(text, 'unkey_rollout_sentinels', { outcome: 'failed' }) >= 1, text.split('\n').filter((l) => l.startsWith('unkey_rollout')).join('\n'));
});
