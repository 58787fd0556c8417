// POST /v1/deployments' optional strategy (issue 13): every bad field is named in one 400 and
// nothing is written; a good one is stored and shown; durations parse in one place.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REGION, testCtrl } from './helpers';
import { parseDuration } from '../../src/workflow/progressive/strategy';

// The Prometheus hosts these strategies name are plain http: allowed explicitly, as operators must.
const t = await testCtrl({ outboundAllow: 'p:9090,prometheus:9090' });
const body = (strategy: unknown) => ({ image: 'nginx:1.27', regions: [REGION], replicas: 1, strategy });
const fields = (r: { body: any }) => [...new Set<string>(r.body.error.details.map((d: { field: string }) => d.field))].sort();

test('durations: units and compounds parse; bare numbers and junk do not', () => {
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('30s'), 30_000);
  assert.equal(parseDuration('1m30s'), 90_000);
  assert.equal(parseDuration('2h'), 7_200_000);
  // One parser with the flags (src/duration.ts, issue 26): decimals and days read there too.
  assert.equal(parseDuration('1.5s'), 1_500);
  assert.equal(parseDuration('1d'), 86_400_000);
  for (const bad of ['30', '', 's', '10 s', '-1s']) assert.equal(parseDuration(bad), undefined, bad);
});

test('a bad canary names every bad field and writes nothing', async () => {
  const before = (await t.api('/v1/deployments')).body.deployments.length;
  const r = await t.api('/v1/deployments', {
    body: body({
      type: 'canary',
      steps: [{ weight: 50, pause: '1m' }, { weight: 20, pause: 'soon' }, { weight: 100, pause: '10s' }, { weight: 0.5, pause: '1s' }],
      analysis: { interval: '10', failureLimit: 0, prometheus: { url: 'ftp://x', query: '' } },
    }),
  });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.error.code, 'ERR_VALIDATION_INVALID');
  assert.deepEqual(fields(r), [
    'strategy.analysis.failureLimit',
    'strategy.analysis.interval',
    'strategy.analysis.prometheus.min',
    'strategy.analysis.prometheus.query',
    'strategy.analysis.prometheus.url',
    'strategy.steps.1.pause',
    'strategy.steps.1.weight',
    'strategy.steps.2.weight',
    'strategy.steps.3.weight',
  ]);
  assert.equal((await t.api('/v1/deployments')).body.deployments.length, before);
});

test('other bad strategies: unknown type, unknown field, no steps, min above max, bad scaleDownDelay, too many checks per step', async () => {
  const cases: [unknown, string[]][] = [
    [{ type: 'linear' }, ['strategy.type']],
    [{ type: 'rolling', steps: [] }, ['strategy.steps']],
    [{ type: 'canary', steps: [] }, ['strategy.steps']],
    [{ type: 'canary' }, ['strategy.steps']],
    [{ type: 'blue-green', scaleDownDelay: '5 minutes' }, ['strategy.scaleDownDelay']],
    [{ type: 'blue-green', analysis: { prometheus: { url: 'http://p:9090', query: 'up', min: 2, max: 1 } } }, ['strategy.analysis.prometheus.max']],
    // A day checked every 100 ms would journal 864,000 checks in one step.
    [{ type: 'canary', steps: [{ weight: 10, pause: '24h' }], analysis: { interval: '100ms', prometheus: { url: 'http://p:9090', query: 'up', min: 1 } } }, ['strategy.steps.0.pause']],
  ];
  for (const [strategy, expected] of cases) {
    const r = await t.api('/v1/deployments', { body: body(strategy) });
    assert.equal(r.status, 400, JSON.stringify(strategy));
    assert.deepEqual(fields(r), expected, JSON.stringify(strategy));
  }
});

test('a good canary and blue-green are accepted and shown with their defaults; no strategy is rolling', async () => {
  const canary = { type: 'canary', steps: [{ weight: 10, pause: '1m' }, { weight: 50, pause: '30s' }], analysis: { prometheus: { url: 'http://prometheus:9090', query: 'sum(rate(errors[1m]))', max: 0.01 } } };
  const c = await t.api('/v1/deployments', { body: body(canary) });
  assert.equal(c.status, 202, JSON.stringify(c.body));
  const shown = (await t.api(`/v1/deployments/${c.body.id}`)).body.strategy;
  assert.deepEqual(shown, { ...canary, analysis: { interval: '10s', failureLimit: 1, judge: 'threshold', ...canary.analysis } });
  const bg = await t.api('/v1/deployments', { body: body({ type: 'blue-green' }) });
  assert.equal(bg.status, 202);
  assert.deepEqual((await t.api(`/v1/deployments/${bg.body.id}`)).body.strategy, { type: 'blue-green', scaleDownDelay: '5m' });
  const plain = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], replicas: 1 } });
  assert.deepEqual((await t.api(`/v1/deployments/${plain.body.id}`)).body.strategy, { type: 'rolling' });
});

test('openapi.json documents the strategy (from the schema that validates it), abort and traffic', async () => {
  const doc = (await t.api('/openapi.json')).body;
  const create = JSON.stringify(doc.paths['/v1/deployments'].post.requestBody);
  for (const word of ['strategy', 'canary', 'blue-green', 'scaleDownDelay', 'failureLimit', 'prometheus']) assert.ok(create.includes(word), word);
  assert.ok(doc.paths['/v1/deployments/{id}/abort'].post);
  assert.ok(doc.paths['/v1/environments/{id}/traffic'].get);
});

test('a Prometheus URL outside the outbound policy is a 400 naming it, and nothing is written (ctrl would query it)', async () => {
  const before = (await t.api('/v1/deployments')).body.deployments.length;
  for (const url of ['http://169.254.169.254/latest', 'https://127.0.0.1:9090', 'http://internal-prometheus:9090']) {
    const r = await t.api('/v1/deployments', { body: body({ type: 'canary', steps: [{ weight: 10, pause: '1m' }], analysis: { prometheus: { url, query: 'up', min: 1 } } }) });
    assert.equal(r.status, 400, url);
    assert.deepEqual(fields(r), ['strategy.analysis.prometheus.url'], url);
  }
  assert.equal((await t.api('/v1/deployments')).body.deployments.length, before);
});
