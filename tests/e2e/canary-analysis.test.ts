// The Prometheus gate of a canary (issue 13) against a real Prometheus (Debian's, on PATH)
// scraping a tiny exporter this test controls: a healthy value passes, a raised error rate rolls
// the canary back, and a query with no data fails closed when the step ends. Where the binary is
// missing the file fails, naming it (the tool check installs it): it used to skip its tests
// unless /usr/bin/prometheus existed, while the check accepted a prometheus anywhere on PATH.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { testStack, until, routeWeights, deploymentIn } from '../helpers/stack';
import { startGauge, startPrometheus } from '../helpers/prometheus';
import { events } from '../../src/store';
import type { LiveEvent } from '../../src/live-events';

const BOTH = ['us-east-1', 'eu-west-1'];

// Prometheus runs on 127.0.0.1 over plain http: allowed explicitly (the outbound policy).
const stack = await testStack({ ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
/** The exporter's one gauge, which the tests set. */
const errorRatio = await startGauge('app_error_ratio', 0.01);
const prometheusUrl = await startPrometheus(errorRatio.port, 'app_error_ratio');
const seen: LiveEvent[] = [];
if (stack) after(await events.listenEvents(stack.db.sql, (e) => void seen.push(e)));

async function create(strategy?: unknown): Promise<string> {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: BOTH, replicas: 1, ...(strategy ? { strategy } : {}) } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id;
}
const finished = (id: string, ms = 30_000) => deploymentIn(stack, id, ['ready', 'failed', 'rolled_back'], ms);
/** A gate that rolled a canary back quarantined its image (issue 25); the bad signal was the
 *  test's own, so the image is released for the next test. */
async function release(): Promise<void> {
  const r = await stack.api(`/v1/environments/default/quarantine/${encodeURIComponent('nginx:1.27')}`, { method: 'DELETE' });
  assert.equal(r.status, 200, 'the rolled-back canary quarantined its image');
}
const weights = async (region: string) => (await routeWeights(stack, region)).join(',');
const canary = (query: string, steps: { weight: number; pause: string }[]) => ({
  type: 'canary',
  steps,
  analysis: { interval: '300ms', failureLimit: 1, prometheus: { url: prometheusUrl, query, max: 0.05 } },
});

/** A rolling deployment serving the environment everywhere: each test's own stable, so each
 *  passes alone by name. */
async function freshStable(): Promise<string> {
  const id = await create();
  assert.equal((await finished(id)).status, 'ready');
  for (const r of BOTH) await until(async () => (await weights(r)) === `${id}:100`, 30_000, `${r} on the stable`);
  return id;
}

test('a canary whose error ratio stays within bounds passes analysis and takes all traffic', async () => {
  await freshStable();
  errorRatio.set(0.01);
  const id = await create(canary('app_error_ratio', [{ weight: 25, pause: '1500ms' }]));
  const done = await finished(id);
  assert.equal(done.status, 'ready', done.error);
  const mine = seen.filter((e): e is Extract<LiveEvent, { type: 'deployment.analysis' }> => e.type === 'deployment.analysis' && e.deploymentId === id);
  assert.ok(mine.length >= 2, `analysis checked every interval: ${mine.length}`);
  assertEvery(mine, (e) => e.verdict === 'pass' && e.value === 0.01 && e.max === 0.05 && e.min === undefined, JSON.stringify(mine));
  assert.ok(seen.some((e) => e.type === 'deployment.traffic' && e.backends.some((b) => b.deploymentId === id && b.weight === 25)));
});

test('a raised error rate rolls the canary back to 100% stable in every region, naming the analysis', async () => {
  const stable = await freshStable();
  errorRatio.set(0.01);
  const id = await create(canary('app_error_ratio', [{ weight: 20, pause: '60s' }]));
  for (const r of BOTH) await until(async () => (await weights(r)) === `${stable}:80,${id}:20`, 30_000, `${r} at 20%`);
  errorRatio.set(0.5);
  const done = await finished(id, 15_000);
  assert.equal(done.status, 'rolled_back');
  assert.match(done.error, /analysis failed: 0\.5 is above the maximum 0\.05/);
  await release();
  for (const r of BOTH) await until(async () => (await weights(r)) === `${stable}:100`, 10_000, `${r} back on stable`);
  assert.ok(seen.some((e) => e.type === 'deployment.analysis' && e.deploymentId === id && e.verdict === 'fail' && e.value === 0.5));
});

test('a query without data is inconclusive and fails closed when the step ends', async () => {
  const stable = await freshStable();
  errorRatio.set(0.01);
  const id = await create(canary('app_metric_nobody_exports', [{ weight: 10, pause: '1200ms' }]));
  const done = await finished(id);
  assert.equal(done.status, 'rolled_back');
  assert.match(done.error, /analysis inconclusive when the step ended \(no data\)/);
  // No data says nothing of the image: the canary fails closed, its image stays deployable.
  assert.equal((await stack.api('/v1/environments/default/quarantine')).body.images.length, 0, 'an inconclusive gate quarantines nothing');
  for (const r of BOTH) await until(async () => (await weights(r)) === `${stable}:100`, 10_000, `${r} back on stable`);
  assert.ok(seen.some((e) => e.type === 'deployment.analysis' && e.deploymentId === id && e.verdict === 'inconclusive'));
});
