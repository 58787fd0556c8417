// The pure pieces of progressive delivery: a canary's split, a withdrawal's, the routing table's
// rules, and how a Prometheus answer is read and judged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canarySplit, sameTable, serves, withoutBackend } from '../../../src/workflow/progressive/traffic';
import { invalidBackends } from '../../../src/store/routes';
import { judge, sampleOf } from '../../../src/workflow/progressive/analysis';

test('canarySplit: the rest stays on the stable deployment; no stable or 100 means all to the canary', () => {
  assert.deepEqual(canarySplit('old', 'new', 10), [{ deploymentId: 'old', weight: 90 }, { deploymentId: 'new', weight: 10 }]);
  assert.deepEqual(canarySplit('old', 'new', 0), [{ deploymentId: 'old', weight: 100 }, { deploymentId: 'new', weight: 0 }]);
  assert.deepEqual(canarySplit('old', 'new', 100), [{ deploymentId: 'new', weight: 100 }]);
  assert.deepEqual(canarySplit(undefined, 'new', 10), [{ deploymentId: 'new', weight: 100 }]);
  for (const w of [0, 1, 37, 99]) assert.equal(invalidBackends(canarySplit('a', 'b', w)), undefined, `split at ${w} is a valid table`);
});

test('withoutBackend: a withdrawn weight goes to the heirs in proportion, in whole percents; no heir leaves nothing', () => {
  const t = (...w: [string, number][]) => w.map(([deploymentId, weight]) => ({ deploymentId, weight }));
  assert.deepEqual(withoutBackend(t(['a', 90], ['b', 10]), 'b', new Set(['a'])), t(['a', 100]));
  assert.deepEqual(withoutBackend(t(['a', 60], ['b', 30], ['c', 10]), 'c', new Set(['a', 'b'])), t(['a', 67], ['b', 33]));
  assert.deepEqual(withoutBackend(t(['a', 50], ['b', 25], ['c', 25]), 'a', new Set(['b', 'c'])), t(['b', 50], ['c', 50]));
  assert.deepEqual(withoutBackend(t(['a', 99], ['b', 1], ['c', 0]), 'a', new Set(['b', 'c'])), t(['b', 100], ['c', 0]));
  assert.deepEqual(withoutBackend(t(['a', 100], ['b', 0], ['c', 0]), 'a', new Set(['b', 'c'])), t(['b', 50], ['c', 50]), 'heirs with nothing share evenly');
  assert.deepEqual(withoutBackend(t(['a', 100], ['b', 0], ['c', 0], ['d', 0]), 'a', new Set(['b', 'c', 'd'])), t(['b', 34], ['c', 33], ['d', 33]));
  // Only heirs inherit: a canary under analysis keeps its own share and gets no more.
  assert.deepEqual(withoutBackend(t(['a', 50], ['b', 40], ['c', 10]), 'a', new Set(['b'])), t(['b', 90], ['c', 10]));
  assert.deepEqual(withoutBackend(t(['a', 90], ['b', 10]), 'a', new Set()), [], 'no deployment left to serve: an empty table');
  assert.deepEqual(withoutBackend(t(['a', 100]), 'a', new Set()), []);
  assert.deepEqual(withoutBackend(t(['a', 100], ['b', 0]), 'b', new Set()), t(['a', 100]), 'a backend without weight just leaves');
  assert.deepEqual(withoutBackend(t(['a', 100]), 'x', new Set()), t(['a', 100]), 'not in the table: unchanged');
  for (const n of [1, 2, 3, 6, 7]) {
    const rest = Array.from({ length: n }, (_, i) => [`h${i}`, i] as [string, number]);
    const table = t(['gone', 100 - rest.reduce((s, [, w]) => s + w, 0)], ...rest);
    assert.equal(invalidBackends(withoutBackend(table, 'gone', new Set(rest.map(([id]) => id)))), undefined, `${n} heirs: still a valid table`);
  }
});

test('sameTable: the same deployments at the same weights, in any order; a weight-0 backend counts', () => {
  const a = { deploymentId: 'a', weight: 90 };
  const b = { deploymentId: 'b', weight: 10 };
  assert.equal(sameTable([a, b], [b, a]), true);
  assert.equal(sameTable([a, b], [a, { ...b, weight: 11 }]), false);
  assert.equal(sameTable([{ deploymentId: 'a', weight: 100 }, { deploymentId: 'b', weight: 0 }], [{ deploymentId: 'a', weight: 100 }]), false, 'a promote of the stable drops the canary at 0');
  assert.equal(sameTable([], []), true);
});

test('serves: only a deployment meant to run and seen ready may carry traffic', () => {
  assert.equal(serves({ status: 'ready', desiredState: 'running' }), true);
  assert.equal(serves({ status: 'stopped', desiredState: 'stopped' }), false);
  assert.equal(serves({ status: 'ready', desiredState: 'stopped' }), false, 'a stop on its way');
  assert.equal(serves({ status: 'deploying', desiredState: 'running' }), false, 'a canary under analysis, a start after a stop');
  assert.equal(serves(undefined), false);
});

test('invalidBackends: weights are whole percents summing to 100, each deployment once', () => {
  assert.equal(invalidBackends([{ deploymentId: 'a', weight: 100 }]), undefined);
  assert.equal(invalidBackends([{ deploymentId: 'a', weight: 100 }, { deploymentId: 'b', weight: 0 }]), undefined);
  assert.match(invalidBackends([])!, /at least one/);
  assert.match(invalidBackends([{ deploymentId: 'a', weight: 60 }, { deploymentId: 'b', weight: 30 }])!, /sum to 90/);
  assert.match(invalidBackends([{ deploymentId: 'a', weight: 50.5 }, { deploymentId: 'b', weight: 49.5 }])!, /integer/);
  assert.match(invalidBackends([{ deploymentId: 'a', weight: 50 }, { deploymentId: 'a', weight: 50 }])!, /twice/);
});

test('judge: inside the bounds passes, outside fails with the reason, no value is inconclusive', () => {
  assert.equal(judge(0.01, undefined, 0.05).verdict, 'pass');
  assert.equal(judge(0.05, 0.05, 0.05).verdict, 'pass', 'bounds are inclusive');
  assert.deepEqual(judge(0.5, undefined, 0.05), { verdict: 'fail', value: 0.5, reason: '0.5 is above the maximum 0.05' });
  assert.deepEqual(judge(0.9, 0.99, undefined), { verdict: 'fail', value: 0.9, reason: '0.9 is below the minimum 0.99' });
  assert.equal(judge(null, 0, 1).verdict, 'inconclusive');
  assert.equal(judge(Number.NaN, 0, 1).verdict, 'inconclusive');
});

test('sampleOf: the first sample of a vector or a scalar; empty, failed or odd answers hold none', () => {
  assert.equal(sampleOf({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1, '0.25'] }] } }), 0.25);
  assert.equal(sampleOf({ status: 'success', data: { resultType: 'scalar', result: [1, '3'] } }), 3);
  assert.equal(sampleOf({ status: 'success', data: { resultType: 'vector', result: [] } }), null);
  assert.equal(sampleOf({ status: 'error', error: 'bad query' }), null);
  assert.equal(sampleOf({ status: 'success', data: { resultType: 'matrix', result: [{ values: [[1, '1']] }] } }), null);
  assert.equal(sampleOf(null), null);
});
