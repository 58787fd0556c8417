// Table tests of the web view's pure parts: what the page shows is decided here, in Node, and
// the views only render it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { age, duration, span } from '../../../src/web/app/format';
import { href, parseHash, type Route } from '../../../src/web/app/router';
import { errorFromResponse } from '../../../src/web/app/api';
import { applyRegion, applyStatus, deploymentActions, filterRows, type Row } from '../../../src/web/app/models/deployments';
import { regionRows } from '../../../src/web/app/models/regions';
import { failedOf, parseWaves, rolloutActions, skippedOf, waveProgress } from '../../../src/web/app/models/rollout';
import { liveLabel } from '../../../src/web/app/models/shell';
import { applyTable, tableTracker } from '../../../src/web/app/models/canary';
import type { DeploymentSummary, RegionView, RolloutView } from '../../../src/cli/api.gen';
import { deploymentSummary, regionView } from '../../cli/fixtures';

test('span and duration read as people read time', () => {
  const cases: [number, string][] = [[-5, '0s'], [0, '0s'], [59_999, '59s'], [60_000, '1m'], [3_600_000, '1h'], [3_660_000, '1h 1m'], [90_000_000, '1d 1h'], [NaN, '–']];
  for (const [ms, want] of cases) assert.equal(span(ms), want, String(ms));
  assert.equal(duration('2026-01-01T00:00:00Z', null), 'running');
  assert.equal(duration('2026-01-01T00:00:00Z', '2026-01-01T00:00:00.340Z'), '340 ms');
  assert.equal(duration('2026-01-01T00:00:00Z', '2026-01-01T00:00:01.250Z'), '1.3 s');
  assert.equal(duration('2026-01-01T00:00:00Z', '2026-01-01T00:02:03Z'), '2m 3s');
  assert.equal(age(null, 0), '–');
  assert.equal(age('garbage', 0), '–');
});

test('routes survive a round trip through the fragment', () => {
  const routes: Route[] = [
    { view: 'deployments', env: 'default', status: '' },
    { view: 'deployments', env: 'prod env', status: 'ready' },
    { view: 'deployment', id: 'dep_1/2' },
    { view: 'regions' },
    { view: 'rollout' },
    { view: 'canaries', env: 'default' },
    { view: 'canaries', env: 'staging' },
  ];
  for (const r of routes) assert.deepEqual(parseHash(href(r)), r, href(r));
  assert.deepEqual(parseHash(''), { view: 'deployments', env: 'default', status: '' });
  assert.deepEqual(parseHash('#/nonsense'), { view: 'deployments', env: 'default', status: '' });
  assert.deepEqual(parseHash('#/deployments/%E0%A4%A'), { view: 'deployment', id: '%E0%A4%A' }, 'a bad escape is kept, not thrown');
});

test('API errors keep the API\'s words; anything else is described by its status', () => {
  const e = errorFromResponse(400, 'Bad Request', { error: { code: 'ERR_API_INVALID', message: 'bad body', details: [{ field: 'replicas', message: 'too big' }, null] } });
  assert.deepEqual([e.status, e.code, e.message, e.details], [400, 'ERR_API_INVALID', 'bad body', [{ field: 'replicas', message: 'too big' }]]);
  const p = errorFromResponse(502, 'Bad Gateway', '<html>');
  assert.deepEqual([p.code, p.message], ['ERR_UNKNOWN', 'HTTP 502 Bad Gateway']);
});

const dep = (o: Partial<DeploymentSummary> = {}): DeploymentSummary => deploymentSummary({ id: 'd1', image: 'nginx:1', regions: ['a', 'b'], replicas: 2, ...o });

test('live events patch the deployments list; an unknown deployment asks for a reload', () => {
  const rows: Row[] = [{ d: dep() }];
  const known = applyStatus(rows, { type: 'deployment.status', deploymentId: 'd1', environmentId: 'default', status: 'ready', error: null });
  assert.equal(known.known, true);
  assert.equal(known.rows[0]!.d.status, 'ready');
  const unknown = applyStatus(rows, { type: 'deployment.status', deploymentId: 'd2', environmentId: 'default', status: 'ready', error: null });
  assert.deepEqual(unknown, { rows, known: false });
  const withRegion = applyRegion(rows, { type: 'deployment.region', deploymentId: 'd1', region: 'b', wanted: 2, running: 1, failed: 0, reason: null });
  assert.deepEqual(withRegion[0]!.regions, [
    { region: 'a', ready: 0, wanted: 2, failed: 0, reason: null },
    { region: 'b', ready: 1, wanted: 2, failed: 0, reason: null },
  ]);
  assert.deepEqual(filterRows(known.rows, 'failed'), []);
  assert.equal(filterRows(known.rows, '').length, 1);
});

test('deployment actions are offered only in the states the API accepts them', () => {
  const canary: DeploymentSummary['strategy'] = { type: 'canary', steps: [{ weight: 10, pause: '1m' }] };
  const on = (d: Partial<DeploymentSummary>) =>
    Object.entries(deploymentActions({ ...dep(), ...d })).filter(([, s]) => s.enabled).map(([a]) => a).sort();
  assert.deepEqual(on({ status: 'ready' }), ['promote', 'rollback', 'stop']);
  assert.deepEqual(on({ status: 'stopped', desiredState: 'stopped' }), ['rollback', 'start']);
  assert.deepEqual(on({ status: 'failed' }), ['rollback']);
  assert.deepEqual(on({ status: 'deploying', strategy: canary }), ['abort', 'rollback', 'stop']);
  assert.deepEqual(on({ status: 'ready', strategy: canary }), ['promote', 'rollback', 'stop'], 'a finished canary cannot be aborted');
  assert.deepEqual(on({ status: 'pending', image: null }), ['stop']);
});

const region = (o: Partial<RegionView>): RegionView => regionView({ name: 'x', ...o });

test('regions: offline and never-seen come first, flagged in words', () => {
  const now = Date.parse('2026-01-01T00:10:00Z');
  const rows = regionRows([
    region({ name: 'b', lastSeenAt: '2026-01-01T00:09:55Z', agent: { id: 'k1', version: '1.0', leader: true }, lag: { changes: 3, seconds: 1 }, objects: { deployments: 2, sentinels: 1 } }),
    region({ name: 'c', status: 'never_seen' }),
    region({ name: 'a', status: 'offline', lastSeenAt: '2026-01-01T00:05:00Z', objects: { deployments: 7 } }),
  ], now);
  assert.deepEqual(rows.map((r) => [r.name, r.flagged, r.statusLabel, r.lastSeen]), [
    ['a', true, 'offline', '5m ago'],
    ['c', true, 'never seen', 'never'],
    ['b', false, 'online', '5s ago'],
  ]);
  assert.deepEqual([rows[2]!.leader, rows[2]!.lag, rows[2]!.objects, rows[0]!.objects], ['k1 (leader) v1.0', '3 changes, 1s', '2 deployments, 1 sentinels', '7 deployments']);
});

test('rollout actions follow the API\'s state rules', () => {
  const table: [string, string[]][] = [
    ['idle', ['start']], ['in_progress', ['cancel']], ['paused', ['cancel', 'resume', 'rollback']],
    ['rolling_back', []], ['cancelled', ['rollback', 'start']], ['completed', ['start']],
  ];
  for (const [state, want] of table) {
    const got = Object.entries(rolloutActions(state)).filter(([, ok]) => ok).map(([a]) => a).sort();
    assert.deepEqual(got, want, state);
  }
});

test('waves: progress and phase from per-wave counts; failures and skipped with their reasons', () => {
  const r: RolloutView = {
    state: 'paused', currentWave: 1, wavePercentages: [25, 50, 100],
    waves: [
      { index: 0, total: 1, succeeded: 1, failed: 0, skipped: 0, pending: 0 },
      { index: 1, total: 2, succeeded: 0, failed: 1, skipped: 0, pending: 1 },
      { index: 2, total: 2, succeeded: 0, failed: 0, skipped: 1, pending: 1 },
    ],
    succeededIds: ['s1'], failedIds: ['s2'], skippedIds: ['s5', 's6'],
    notes: { s2: { wave: 1, reason: 'CrashLoopBackOff' }, s5: { wave: 2 }, s6: { wave: 2, reason: 'region offline' } },
  };
  assert.deepEqual(waveProgress(r).map((w) => [w.index, w.percentage, w.total, w.succeeded, w.failed, w.skipped, w.pending, w.phase]), [
    [0, 25, 1, 1, 0, 0, 0, 'done'],
    [1, 50, 2, 0, 1, 0, 1, 'failed'],
    [2, 100, 2, 0, 0, 1, 1, 'waiting'],
  ]);
  assert.deepEqual(failedOf(r), [{ id: 's2', reason: 'CrashLoopBackOff' }]);
  assert.deepEqual(skippedOf(r), [{ id: 's5', reason: undefined }, { id: 's6', reason: 'region offline' }]);
  const running: RolloutView = { ...r, state: 'in_progress', waves: [r.waves![0]!, { index: 1, total: 1, succeeded: 0, failed: 0, skipped: 0, pending: 1 }] };
  assert.deepEqual(waveProgress(running).map((w) => w.phase), ['done', 'running']);
  assert.deepEqual(parseWaves(' 1, 5 25 ,100 '), [1, 5, 25, 100]);
  assert.equal(parseWaves('  '), undefined);
});

test('the header says whether the page is live, in words', () => {
  assert.deepEqual(liveLabel({ kind: 'live' }, 0), { text: 'Live', tone: 'ok' });
  assert.match(liveLabel({ kind: 'reconnecting', attempt: 2, retryAt: 3500 }, 1000).text, /^Connection lost: reconnecting in 3s/);
  assert.match(liveLabel({ kind: 'reconnecting', attempt: 2, retryAt: 500 }, 1000).text, /reconnecting…/);
});

test('a traffic table moves every charted line: a deployment dropped from the table falls to 0', () => {
  let all = applyTable({}, [{ deploymentId: 'stable', weight: 80 }, { deploymentId: 'canary', weight: 20 }], 1);
  all = applyTable(all, [{ deploymentId: 'stable', weight: 50 }, { deploymentId: 'canary', weight: 50 }], 2);
  // A rollback lists the stable alone; the canary is not listed at 0.
  all = applyTable(all, [{ deploymentId: 'stable', weight: 100 }], 3);
  assert.deepEqual(all.canary!.weights, [{ t: 1, weight: 20 }, { t: 2, weight: 50 }, { t: 3, weight: 0 }]);
  assert.deepEqual(all.stable!.weights, [{ t: 1, weight: 80 }, { t: 2, weight: 50 }, { t: 3, weight: 100 }]);
  // Unchanged weights add no point, and the analysis already seen is kept.
  const analysed = { ...all, canary: { ...all.canary!, analysis: [{ t: 2, value: 0.01, verdict: 'pass' as const }] } };
  const again = applyTable(analysed, [{ deploymentId: 'stable', weight: 100 }], 4);
  assert.equal(again.canary!.weights.length, 3);
  assert.equal(again.canary!.analysis.length, 1);
});

test('a traffic read in flight when an event arrives answers with the event\'s newer table', async () => {
  const tables = tableTracker();
  const table = (w: number) => ({ environmentId: 'e', hostname: 'h', backends: [{ deploymentId: 'stable', weight: 100 - w }, { deploymentId: 'canary', weight: w }] });
  let answer!: (t: ReturnType<typeof table>) => void;
  const slow = tables.read(() => new Promise((r) => (answer = r)));
  tables.event(table(20).backends);
  answer(table(0));
  assert.deepEqual((await slow).backends, table(20).backends, 'not the 0% it read before the event');
  // A read with no event meanwhile is taken as read.
  assert.deepEqual((await tables.read(async () => table(50))).backends, table(50).backends);
});
