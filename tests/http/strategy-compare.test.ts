// The compare judge's settings on POST /v1/deployments (issue 27): every bad field is named in
// one 400, settings of the other judge are refused rather than ignored, and a good compare
// strategy is stored and shown as given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REGION, testCtrl } from './helpers';

const t = await testCtrl({ outboundAllow: 'prometheus:9090' });
const body = (analysis: unknown) => ({ image: 'nginx:1.27', regions: [REGION], replicas: 1, strategy: { type: 'canary', steps: [{ weight: 10, pause: '1m' }], analysis } });
const fields = (r: { body: any }) => [...new Set<string>(r.body.error.details.map((d: { field: string }) => d.field))].sort();
const url = 'http://prometheus:9090';
const query = 'sum(rate(http_errors_total{deployment="$deployment",region="$region"}[30s]))';

test('bad compare settings are each named in one 400, and nothing is written', async () => {
  const before = (await t.api('/v1/deployments')).body.deployments.length;
  const r = await t.api('/v1/deployments', {
    body: body({ judge: 'compare', prometheus: { url, query: 'up', max: 1 }, direction: 'down', tolerance: -1, confidence: 1.5, minSamples: 1, promoteEarly: 'yes' }),
  });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.deepEqual(fields(r), [
    'strategy.analysis.confidence',
    'strategy.analysis.direction',
    'strategy.analysis.minSamples',
    'strategy.analysis.promoteEarly',
    'strategy.analysis.tolerance',
  ]);
  // The cross-field rules once the fields themselves are good: bounds belong to threshold, and a
  // query that does not select by deployment would compare a series with itself.
  const cross = await t.api('/v1/deployments', { body: body({ judge: 'compare', prometheus: { url, query: 'up', max: 1 } }) });
  assert.equal(cross.status, 400);
  assert.deepEqual(fields(cross), ['strategy.analysis.prometheus.max', 'strategy.analysis.prometheus.query']);
  const threshold = await t.api('/v1/deployments', { body: body({ prometheus: { url, query: 'up', max: 1, totalQuery: 'x' }, tolerance: 0.1, direction: 'lower-is-better' }) });
  assert.equal(threshold.status, 400);
  assert.deepEqual(fields(threshold), ['strategy.analysis.direction', 'strategy.analysis.prometheus.totalQuery', 'strategy.analysis.tolerance']);
  const unknown = await t.api('/v1/deployments', { body: body({ judge: 'kayenta', prometheus: { url, query } }) });
  assert.deepEqual(fields(unknown), ['strategy.analysis.judge']);
  assert.equal((await t.api('/v1/deployments')).body.deployments.length, before);
});

test('a good compare strategy is accepted and shown as given', async () => {
  const analysis = { interval: '10s', judge: 'compare', prometheus: { url, query }, direction: 'higher-is-better', tolerance: 0.05, confidence: 0.99, minSamples: 30, promoteEarly: true };
  const c = await t.api('/v1/deployments', { body: body(analysis) });
  assert.equal(c.status, 202, JSON.stringify(c.body));
  const shown = (await t.api(`/v1/deployments/${c.body.id}`)).body;
  assert.deepEqual(shown.strategy.analysis, { failureLimit: 1, ...analysis });
  assert.deepEqual(shown.analysis, { checks: [] });
});
