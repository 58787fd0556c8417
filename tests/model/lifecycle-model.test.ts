// The model's rules, table-tested on hand-made snapshots: each rule fires on the state it names
// and stays quiet on the legitimate states next to it (a weight-0 newcomer, a stable stopped by
// the operator, an abort still under way).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as M from './lifecycle-model';

const REGIONS = ['a', 'b'];
const ready = { a: 1, b: 1 };
function snap(over: Partial<M.Snapshot> = {}): M.Snapshot {
  return {
    table: [{ deploymentId: 's', weight: 80 }, { deploymentId: 'c', weight: 20 }],
    deployments: { s: { status: 'ready', desiredState: 'running', error: null }, c: { status: 'network', desiredState: 'running', error: null } },
    readyPods: { s: ready, c: ready },
    failedChecks: {},
    regionStatus: { a: 'online', b: 'online' },
    ...over,
  };
}
function model(): M.Model {
  let m = M.created(M.initialModel(), { id: 's', kind: 'rolling', failureLimit: Infinity, query: 'qs', stable: null });
  m = M.created(m, { id: 'c', kind: 'canary', failureLimit: 2, query: 'qc', stable: 's' });
  return m;
}
const rules = (vs: M.Violation[]) => vs.map((v) => v.rule);

test('traffic: weights sum to 100, no stopped/failed backend, a share only with ready pods everywhere', () => {
  assert.deepEqual(M.trafficViolations(snap(), REGIONS), []);
  assert.deepEqual(M.trafficViolations(snap({ table: [] }), REGIONS), []);
  assert.deepEqual(rules(M.trafficViolations(snap({ table: [{ deploymentId: 's', weight: 80 }] }), REGIONS)), ['traffic']);
  const stopped = snap({ deployments: { ...snap().deployments, c: { status: 'rolled_back', desiredState: 'stopped', error: 'x' } } });
  assert.deepEqual(rules(M.trafficViolations(stopped, REGIONS)), ['traffic']);
  assert.deepEqual(rules(M.trafficViolations(snap({ readyPods: { s: ready, c: { a: 1 } } }), REGIONS)), ['traffic']);
  // A newcomer at weight 0 may still be starting.
  assert.deepEqual(M.trafficViolations(snap({ table: [{ deploymentId: 's', weight: 100 }, { deploymentId: 'c', weight: 0 }], readyPods: { s: ready } }), REGIONS), []);
});

test('limit: failed checks at failureLimit and the deployment at 100% or ready', () => {
  const at100 = snap({ table: [{ deploymentId: 'c', weight: 100 }], failedChecks: { qc: 2 } });
  assert.deepEqual(rules(M.limitViolations(model(), at100)), ['limit']);
  assert.deepEqual(M.limitViolations(model(), snap({ failedChecks: { qc: 2 } })), []);
  assert.deepEqual(M.limitViolations(model(), { ...at100, failedChecks: { qc: 1 } }), []);
});

test('desired: the last accepted stop/start decides; a later abort may stop it', () => {
  const m = M.desiredAccepted(M.tick(M.desiredAccepted(model(), 'c', 'stopped')), 'c', 'running');
  const overwritten = snap({ deployments: { ...snap().deployments, c: { status: 'rolled_back', desiredState: 'stopped', error: 'stopped by operator' } } });
  assert.deepEqual(rules(M.desiredViolations(m, overwritten)), ['desired-overwritten']);
  assert.deepEqual(M.desiredViolations(M.abortAccepted(M.tick(m), 'c', 20, true), overwritten), []);
  const stoppedButRunning = M.desiredAccepted(model(), 'c', 'stopped');
  assert.deepEqual(rules(M.desiredViolations(stoppedButRunning, snap())), ['desired']);
});

test('desired: a canary created after a start, while its deployment was not yet serving, may still take it as its stable and stop it (lifecycle model, seed -1928045894)', () => {
  // stopThenStart(#0), then create(canary) while #0 is deploying: the model saw no stable, but the
  // walk takes its stable when it begins (docs/progressive-delivery.md), by then #0, ready again.
  let m = M.created(M.initialModel(), { id: 's', kind: 'rolling', failureLimit: Infinity, query: 'qs', stable: null });
  m = M.desiredAccepted(M.tick(m), 's', 'running');
  m = M.created(M.tick(m), { id: 'c', kind: 'canary', failureLimit: 3, query: 'qc', stable: null });
  const switched = snap({ table: [{ deploymentId: 'c', weight: 100 }], deployments: { s: { status: 'stopped', desiredState: 'stopped', error: null }, c: { status: 'ready', desiredState: 'running', error: null } }, walkStables: { c: ['s'] } });
  assert.deepEqual(M.desiredViolations(m, switched), []);
  // The same end when the canary's walk took no stable (or another): something else stopped it.
  assert.deepEqual(rules(M.desiredViolations(m, { ...switched, walkStables: {} })), ['desired-overwritten']);
  assert.deepEqual(rules(M.desiredViolations(m, { ...switched, walkStables: { c: ['x'] } })), ['desired-overwritten']);
  // A rolling deploy after the start stops nothing, and a canary created before it is defect 6.
  let rolled = M.created(M.desiredAccepted(M.tick(M.created(M.initialModel(), { id: 's', kind: 'rolling', failureLimit: Infinity, query: 'qs', stable: null })), 's', 'running'), { id: 'c', kind: 'rolling', failureLimit: Infinity, query: 'qc', stable: null });
  assert.deepEqual(rules(M.desiredViolations(rolled, switched)), ['desired-overwritten']);
  rolled = M.desiredAccepted(M.tick(M.created(M.created(M.initialModel(), { id: 's', kind: 'rolling', failureLimit: Infinity, query: 'qs', stable: null }), { id: 'c', kind: 'blue-green', failureLimit: Infinity, query: 'qc', stable: null })), 's', 'running');
  assert.deepEqual(rules(M.desiredViolations(rolled, switched)), ['desired-overwritten']);
});

test('abort: settled when rolled back, without share, the stable at 100%; never more share after it', () => {
  const m = M.abortAccepted(M.tick(model()), 'c', 0, true);
  const d = m.deployments[1]!;
  assert.equal(M.abortSettled(d, snap()), false);
  const done = snap({ table: [{ deploymentId: 's', weight: 100 }], deployments: { ...snap().deployments, c: { status: 'rolled_back', desiredState: 'stopped', error: 'aborted by operator' } } });
  assert.equal(M.abortSettled(d, done), true);
  // A rolling deploy that became ready meanwhile holds the environment instead: settled too.
  const rolledOver = { ...done, table: [{ deploymentId: 'r', weight: 100 }], deployments: { ...done.deployments, r: { status: 'ready', desiredState: 'running', error: null } } };
  assert.equal(M.abortSettled(d, rolledOver), true);
  // But not while the canary itself, or something not ready, still has a share.
  assert.equal(M.abortSettled(d, { ...rolledOver, table: [{ deploymentId: 'r', weight: 80 }, { deploymentId: 'c', weight: 20 }] }), false);
  assert.deepEqual(rules(M.abortViolations(m, snap())), ['abort-before-traffic']);
  assert.deepEqual(M.abortViolations(m, done), []);
  // A start accepted after the abort restarts it: the operator's newer decision.
  const restarted = snap({ table: [{ deploymentId: 'c', weight: 100 }], deployments: { ...snap().deployments, c: { status: 'ready', desiredState: 'running', error: null } } });
  assert.deepEqual(rules(M.abortViolations(m, restarted)), ['abort-before-traffic', 'abort']);
  assert.deepEqual(M.abortViolations(M.desiredAccepted(M.tick(m), 'c', 'running'), restarted), []);
  // Without a serving stable the canary is a rolling deploy: its abort is not judged.
  assert.deepEqual(M.abortViolations(M.abortAccepted(M.tick(model()), 'c', 0, false), snap()), []);
});

test('stable: untouched while the newest walk is under way, unless the operator stopped or started it', () => {
  const stableStopped = snap({ deployments: { ...snap().deployments, s: { status: 'stopped', desiredState: 'stopped', error: null } } });
  assert.deepEqual(rules(M.stableViolations(model(), stableStopped)), ['stable']);
  assert.deepEqual(M.stableViolations(M.desiredAccepted(model(), 's', 'stopped'), stableStopped), []);
  const restarting = snap({ deployments: { ...snap().deployments, s: { status: 'deploying', desiredState: 'running', error: null } } });
  assert.deepEqual(M.stableViolations(M.desiredAccepted(model(), 's', 'running'), restarting), []);
  // An earlier blue-green of the same stable switched and scaled it down: that walk's to do.
  let m = M.created(M.initialModel(), { id: 's', kind: 'rolling', failureLimit: Infinity, query: 'qs', stable: null });
  m = M.created(m, { id: 'bg', kind: 'blue-green', failureLimit: 2, query: 'qb', stable: 's' });
  m = M.created(m, { id: 'c', kind: 'canary', failureLimit: 2, query: 'qc', stable: 's' });
  const switched = { ...stableStopped, deployments: { ...stableStopped.deployments, bg: { status: 'ready', desiredState: 'running', error: null } } };
  assert.deepEqual(M.stableViolations(m, switched), []);
  assert.deepEqual(rules(M.stableViolations(m, { ...switched, deployments: { ...switched.deployments, bg: { status: 'deploying', desiredState: 'running', error: null } } })), ['stable']);
});

test('offline: a walk does not move forward while a region is offline throughout', () => {
  const off = { regionStatus: { a: 'offline', b: 'online' } };
  const before = snap(off);
  const after = snap({ ...off, table: [{ deploymentId: 's', weight: 50 }, { deploymentId: 'c', weight: 50 }] });
  assert.deepEqual(rules(M.offlineViolations(model(), before, after, ['a'])), ['offline']);
  assert.deepEqual(M.offlineViolations(model(), before, after, []), []);
  assert.deepEqual(M.offlineViolations(model(), before, before, ['a']), []);
});

test('known-defect rules are reported apart unless strict', () => {
  const { failing, known } = M.judged([{ rule: 'limit', message: '' }, { rule: 'traffic', message: '' }]);
  if (M.STRICT) assert.equal(failing.length, 2);
  else assert.deepEqual([rules(failing), rules(known)], [['traffic'], ['limit']]);
});

test('stop and start sent together: the answers, not the order of sending, say which was applied last', () => {
  const ans = (changed: boolean, generation: number) => ({ status: 200, body: { changed, generation } });
  // Applied in the order sent: the start last.
  assert.deepEqual(M.appliedInOrder([['stopped', ans(true, 3)], ['running', ans(true, 4)]]).map(([s]) => s), ['stopped', 'running']);
  // The start reached the server first: a no-op on a running deployment, then the stop.
  assert.deepEqual(M.appliedInOrder([['stopped', ans(true, 3)], ['running', ans(false, 2)]]).map(([s]) => s), ['stopped']);
  // On a stopped deployment the start came first and the stop undid it.
  assert.deepEqual(M.appliedInOrder([['stopped', ans(true, 5)], ['running', ans(true, 4)]]).map(([s]) => s), ['running', 'stopped']);
  // A refusal decided nothing.
  assert.deepEqual(M.appliedInOrder([['stopped', { status: 409, body: {} }], ['running', ans(false, 2)]]), []);
});
