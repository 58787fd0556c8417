import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffRegion, diffRoutes, percentile, resourceKey, stepsTwice, trafficViolations, wrongDeletions, type Deletion, type DesiredSpec, type StatusEvent, type TrafficRow, type WantedSample } from '../../bench/chaos/invariants';

const spec = (image: string, replicas: number): DesiredSpec => ({ image, replicas });

test('diffRegion: equal, missing, extra and different specs', () => {
  const desired = new Map([
    ['deployment/a', spec('nginx:1', 2)],
    ['sentinel/s', spec('sentinel:v1', 1)],
  ]);
  assert.deepEqual(diffRegion(desired, new Map(desired)), []);
  assert.deepEqual(diffRegion(desired, new Map([['deployment/a', spec('nginx:1', 2)]])), ['sentinel/s: missing']);
  assert.deepEqual(diffRegion(new Map(), new Map([['deployment/x', spec('i', 1)]])), ['deployment/x: not wanted but present']);
  assert.deepEqual(diffRegion(desired, new Map([['deployment/a', spec('nginx:1', 1)], ['sentinel/s', spec('sentinel:v0', 1)]])), [
    'deployment/a: has nginx:1×1, wants nginx:1×2',
    'sentinel/s: has sentinel:v0×1, wants sentinel:v1×1',
  ]);
});

test('diffRegion: an autoscaled deployment may run any count between its bounds', () => {
  const want = new Map([['deployment/auto', { image: 'app:cpuhot', replicas: 1, maxReplicas: 3 }]]);
  assert.deepEqual(diffRegion(want, new Map([['deployment/auto', spec('app:cpuhot', 3)]])), []);
  assert.deepEqual(diffRegion(want, new Map([['deployment/auto', spec('app:cpuhot', 1)]])), []);
  assert.deepEqual(diffRegion(want, new Map([['deployment/auto', spec('app:cpuhot', 4)]])), ['deployment/auto: has app:cpuhot×4, wants app:cpuhot×1-3']);
});

test('diffRoutes: a ConfigMap per table with its weights, each entry with a share addressing exactly its ready pods', () => {
  const desired = new Map([['env', [{ deploymentId: 'auto', weight: 100 }]]]);
  const ready = (id: string) => (id === 'auto' ? ['auto-0', 'auto-1', 'auto-2'] : []);
  const cm = (addresses: string[], weight = 100) => new Map([['env', [{ deploymentId: 'auto', weight, addresses }]]]);
  assert.deepEqual(diffRoutes(desired, cm(['auto-0', 'auto-1', 'auto-2']), ready, 'r'), []);
  assert.equal(diffRoutes(desired, cm(['auto-0']), ready, 'r').length, 1, 'the minimum only (issue 33)');
  assert.equal(diffRoutes(desired, new Map(), ready, 'r').length, 1, 'missing');
  assert.equal(diffRoutes(new Map(), cm([]), ready, 'r').length, 1, 'not wanted');
  assert.equal(diffRoutes(desired, cm(['auto-0', 'auto-1', 'auto-2'], 50), ready, 'r').length, 1, 'other weights');
});

const ev = (deploymentId: string, status: string, session = 1, t = 0): StatusEvent => ({ t, session, deploymentId, status, error: null });

test('stepsTwice: the same once-per-run status twice in a row on one session', () => {
  const cases: { name: string; events: StatusEvent[]; twice: string[] }[] = [
    { name: 'a normal run', events: [ev('a', 'deploying'), ev('a', 'network'), ev('a', 'ready')], twice: [] },
    { name: 'ready twice', events: [ev('a', 'network'), ev('a', 'ready'), ev('a', 'ready')], twice: ['a:ready'] },
    { name: 'ready, stop, start, ready', events: [ev('a', 'ready'), ev('a', 'stopped'), ev('a', 'deploying'), ev('a', 'network'), ev('a', 'ready')], twice: [] },
    { name: 'start and workflow both write deploying', events: [ev('a', 'deploying'), ev('a', 'deploying')], twice: [] },
    { name: 'interleaved deployments', events: [ev('a', 'ready'), ev('b', 'ready'), ev('a', 'network')], twice: [] },
    { name: 'a reconnect in between may have missed events', events: [ev('a', 'ready', 1), ev('a', 'ready', 2)], twice: [] },
    { name: 'failed twice', events: [ev('a', 'failed'), ev('a', 'failed')], twice: ['a:failed'] },
  ];
  for (const c of cases) {
    assert.deepEqual(
      stepsTwice(c.events).map((v) => `${v.detail.deploymentId}:${v.detail.status}`),
      c.twice,
      c.name,
    );
  }
});

const managed = (extra: Record<string, string>) => ({ 'app.kubernetes.io/managed-by': 'krane', ...extra });
const depLabels = managed({ 'app.kubernetes.io/component': 'deployment', 'unkey.com/deployment.id': 'd1' });

test('resourceKey maps managed objects back to their resource', () => {
  assert.equal(resourceKey(depLabels), 'deployment/d1');
  assert.equal(resourceKey(managed({ 'app.kubernetes.io/component': 'sentinel', 'unkey.com/sentinel.id': 's1' })), 'sentinel/s1');
  assert.equal(resourceKey(managed({ 'app.kubernetes.io/component': 'gossip' })), undefined);
  assert.equal(resourceKey({ 'unkey.com/deployment.id': 'd1' }), undefined);
});

const sample = (t: number, keys: string[]): WantedSample => ({ t, wanted: new Map([['r1', new Map(keys.map((k) => [k, {}]))]]) });
const del = (t: number, over: Partial<Deletion> = {}): Deletion => ({ region: 'r1', t, kind: 'StatefulSet', name: 'd1', cause: 'request', labels: depLabels, ...over });

test('wrongDeletions: wanted before and after, untouched by the workload', () => {
  const wanted = [sample(0, ['deployment/d1']), sample(250, ['deployment/d1']), sample(500, ['deployment/d1'])];
  const stoppedAt250 = [sample(0, ['deployment/d1']), sample(250, []), sample(500, [])];
  const never = () => false;
  const cases: { name: string; d: Deletion; samples: WantedSample[]; touched?: () => boolean; wrong: boolean }[] = [
    { name: 'deleted while wanted', d: del(300), samples: wanted, wrong: true },
    { name: 'deleted after a stop', d: del(300), samples: stoppedAt250, wrong: false },
    { name: 'deleted between stop and sample', d: del(200), samples: stoppedAt250, wrong: false },
    { name: 'the workload stopped and started it in the gap', d: del(300), samples: wanted, touched: () => true, wrong: false },
    { name: 'a cascade (judged through its owner)', d: del(300, { cause: 'cascade' }), samples: wanted, wrong: false },
    { name: 'a pod (controllers replace pods)', d: del(300, { kind: 'Pod' }), samples: wanted, wrong: false },
    { name: 'not managed by krane', d: del(300, { labels: { 'unkey.com/deployment.id': 'd1' } }), samples: wanted, wrong: false },
    { name: 'no sample after it', d: del(900), samples: wanted, wrong: false },
    { name: 'another region', d: del(300, { region: 'r2' }), samples: wanted, wrong: false },
  ];
  for (const c of cases) assert.equal(wrongDeletions([c.d], c.samples, c.touched ?? never).length, c.wrong ? 1 : 0, c.name);
});

test('percentile: nearest rank', () => {
  assert.equal(percentile([], 50), undefined);
  assert.equal(percentile([5], 99), 5);
  assert.equal(percentile([4, 1, 3, 2], 50), 2);
  assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99), 10);
  assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 100), 10);
});

test('traffic rules (the model\'s module): weights sum to 100, every entry a deployment of the environment, none stopped/failed/rolled back, a share only when running everywhere', () => {
  const row = (deploymentId: string, weight: number, o: Partial<TrafficRow> = {}): TrafficRow => ({ environmentId: 'e', deploymentId, weight, status: 'ready', desiredState: 'running', running: { a: 1, b: 1 }, ...o });
  const rules = (rows: TrafficRow[]) => trafficViolations(0, rows).map((v) => v.detail.rule);
  assert.deepEqual(rules([row('s', 80), row('c', 20, { status: 'network' })]), []);
  assert.deepEqual(rules([row('s', 100), row('g', 0, { status: 'deploying', running: { a: 0, b: 0 } })]), []);
  assert.deepEqual(rules([row('s', 80)]), ['weights']);
  assert.deepEqual(rules([row('s', 100), row('c', 0, { status: 'rolled_back', desiredState: 'stopped' })]), ['serving']);
  assert.deepEqual(rules([row('s', 50), row('c', 50, { running: { a: 1, b: 0 } })]), ['ready']);
  // An entry naming no deployment, or another environment's, is a broken table (the model and
  // the harness once judged this differently: issue 33).
  assert.deepEqual(rules([row('s', 100), row('gone', 0, { status: null, desiredState: null })]), ['backend']);
  assert.deepEqual(rules([row('s', 100), row('x', 0, { deploymentEnvironmentId: 'other' })]), ['backend']);
  // Tables are judged per environment.
  assert.deepEqual(rules([row('s', 100), row('t', 100, { environmentId: 'f' })]), []);
});
