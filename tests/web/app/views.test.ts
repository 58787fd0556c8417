// The views' render functions, data in and HTML out (preact-render-to-string, no browser): what
// an operator reads for each case, including a ctrl that does not serve an endpoint yet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { h } from 'preact';
import { render } from 'preact-render-to-string';
import { ApiError } from '../../../src/web/app/api';
import { regionRows } from '../../../src/web/app/models/regions';
import { waveProgress } from '../../../src/web/app/models/rollout';
import { chartGeometry, strategyText } from '../../../src/web/app/models/canary';
import { Badge, ErrorBox, isUnavailable, Unavailable } from '../../../src/web/app/views/common';
import { RegionsTable } from '../../../src/web/app/views/regions';
import { RolloutDetails, Waves } from '../../../src/web/app/views/rollout';
import { CanaryChart, chartedIds } from '../../../src/web/app/views/canaries';
import { WeightsTable } from '../../../src/web/app/views/traffic';
import { DeploymentsTable } from '../../../src/web/app/views/deployments';
import { unavailableAction } from '../../../src/web/app/views/deployment';
import type { RolloutView } from '../../../src/cli/api.gen';
import { deploymentSummary, regionView } from '../../cli/fixtures';

const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/&amp;/g, '&').replace(/\s+/g, ' ').trim();

test('an API error is shown as the API words it, with each bad field', () => {
  const html = render(h(ErrorBox, { error: new ApiError(400, 'ERR_API_INVALID', 'invalid body', [{ field: 'replicas', message: 'must be at most 100' }]), title: 'Refused' }));
  assert.match(html, /role="alert"/);
  assert.equal(text(html), 'Refused: invalid body ERR_API_INVALID replicas : must be at most 100');
  assert.equal(render(h(ErrorBox, { error: undefined })), '');
});

test('only a route-level 404 means "not available on this server"', () => {
  const table: [ApiError, boolean][] = [
    [new ApiError(404, 'ERR_NOT_FOUND', 'no route GET /v1/regions'), true],
    [new ApiError(404, 'ERR_UNKNOWN', 'HTTP 404 Not Found'), true],
    [new ApiError(404, 'ERR_NOT_FOUND', 'environment prod not found'), false],
    [new ApiError(500, 'ERR_INTERNAL', 'internal error'), false],
  ];
  for (const [e, want] of table) assert.equal(isUnavailable(e), want, e.message);
  assert.match(text(render(h(Unavailable, { what: 'Regions', endpoint: 'GET /v1/regions' }))), /^Regions: not available on this server \( ?GET \/v1\/regions answered 404/);
});

test('badges carry the status in text and a class safe for CSS', () => {
  assert.equal(render(h(Badge, { status: 'rolled_back' })), '<span class="badge s-rolled_back">rolled back</span>');
  assert.equal(render(h(Badge, { status: 'x"><script>' })), '<span class="badge s-xscript">x&quot;>&lt;script></span>');
});

test('an offline region is flagged in its row, in words', () => {
  const rows = regionRows([
    regionView({ name: 'us-east-1', status: 'online' }),
    regionView({ name: 'eu-west-1', status: 'offline' }),
  ], 0);
  const html = render(h(RegionsTable, { rows }));
  assert.match(html, /<tr data-region="eu-west-1" data-status="offline" class="flagged">/);
  assert.match(text(html), /eu-west-1 ⚠ offline never/);
  assert.ok(html.indexOf('eu-west-1') < html.indexOf('us-east-1'), 'flagged first');
});

test('waves render as progress bars with counts; ids with reasons', () => {
  const r: RolloutView = {
    state: 'paused', currentWave: 1, wavePercentages: [50, 100], failedIds: ['s2'], succeededIds: ['s1'], skippedIds: ['s3'],
    succeeded: 1, failed: 1, skippedOffline: 1,
    notes: { s2: { wave: 1, reason: 'timeout' }, s3: { wave: 1, reason: 'region eu-west-1 offline' } },
    waves: [{ index: 0, total: 1, succeeded: 1, failed: 0, skipped: 0, pending: 0 }, { index: 1, total: 2, succeeded: 0, failed: 1, skipped: 1, pending: 0 }],
  };
  const waves = render(h(Waves, { waves: waveProgress(r) }));
  assert.match(waves, /<progress max="1" value="1" aria-label="wave 1 progress">/);
  assert.match(waves, /<progress max="2" value="2" aria-label="wave 2 progress">/);
  assert.match(text(waves), /Wave 2 \(to 100%\) 0\/2 ready · 1 failed · 1 skipped · failed/);
  const details = text(render(h(RolloutDetails, { r })));
  assert.match(details, /Failed \(1\) s2 : timeout/);
  assert.match(details, /Skipped \(1\) s3 : region eu-west-1 offline/);
});

test('traffic weights, strategies and the canary chart', () => {
  const traffic = { environmentId: 'e', hostname: 'app.example.com', backends: [{ deploymentId: 'stable', weight: 90 }, { deploymentId: 'canary', weight: 10 }] };
  const html = render(h(WeightsTable, { traffic, highlight: 'canary' }));
  assert.match(html, /<tr class="current" data-deployment="canary" data-weight="10">/);
  assert.match(text(html), /stable 90% canary 10%/);
  assert.deepEqual(chartedIds(traffic, {}), ['canary', 'stable'], 'both sides of a split');
  assert.deepEqual(chartedIds({ ...traffic, backends: [{ deploymentId: 'only', weight: 100 }] }, { old: { weights: [], analysis: [{ t: 1, value: 1, verdict: 'pass' }] } }), ['old']);
  assert.equal(strategyText({ type: 'canary', steps: [{ weight: 10, pause: '1m' }, { weight: 50 }], analysis: { interval: '10s' } }), 'canary 10% (pause 1m) → 50%, analysis every 10s');
  assert.equal(strategyText({ type: 'blue-green', scaleDownDelay: '5m' }), 'blue-green, old version kept 5m');
  const series = { weights: [{ t: 0, weight: 10 }, { t: 60_000, weight: 50 }], analysis: [{ t: 30_000, value: 0.2, verdict: 'pass' as const }, { t: 90_000, value: 0.9, verdict: 'fail' as const }], min: 0, max: 0.5 };
  const g = chartGeometry(series, 120_000);
  assert.equal(g.weightPath, 'M40 159.4H316V93H592', 'a step line from 10% to 50% (plot 40..592 × 176..10), drawn on to now');
  assert.deepEqual(g.dots.map((d) => d.verdict), ['pass', 'fail']);
  assert.deepEqual(g.bounds.map((b) => b.label), ['min 0', 'max 0.5']);
  const chart = render(h(CanaryChart, { id: 'canary', series, now: 120_000 }));
  assert.match(chart, /<circle class="dot v-fail"/);
  assert.match(text(chart), /canary : weight 50% \(line, left axis\); last analysis 0.9 \(fail\)/);
});

test('the deployments table shows status, source, per-region ready/wanted, age and error', () => {
  const d = deploymentSummary({
    id: 'd1', status: 'failed', error: 'CrashLoopBackOff in eu-west-1', image: null, buildContext: 'apps/web', regions: ['eu-west-1'], replicas: 1, createdAt: '2026-01-01T00:00:00Z',
  });
  const html = render(h(DeploymentsTable, { rows: [{ d, regions: [{ region: 'eu-west-1', ready: 0, wanted: 1, failed: 1, reason: 'CrashLoopBackOff' }] }], env: 'default', now: Date.parse('2026-01-01T00:03:00Z') }));
  assert.match(html, /<tr data-id="d1" data-status="failed">/);
  assert.equal(text(html).split('Error ')[1], 'd1 v1 failed build: apps/web eu-west-1 0/1 · 1 failed 3m CrashLoopBackOff in eu-west-1');
  const missing = unavailableAction(new ApiError(404, 'ERR_NOT_FOUND', 'no route POST /v1/deployments/d1/abort'), 'Abort');
  assert.equal(missing.message, 'Abort is not available on this server (no route POST /v1/deployments/d1/abort)');
  const real = new ApiError(409, 'ERR_DEPLOYMENT_STATE', 'not running');
  assert.equal(unavailableAction(real, 'Stop'), real);
});
