// The pure rules of a canary's or blue-green's hold (issue 23), table-tested: what one check
// decides given what the checks before it found (canary.ts#judgeCheck), and when a later stop
// and start take a deployment from the run that began under an older generation
// (walk.ts#superseded).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeCheck, type Check } from '../../../src/workflow/progressive/canary';
import { stepVerdict, superseded, yieldsToStart } from '../../../src/workflow/progressive/walk';
import type { AnalysisResult } from '../../../src/workflow/progressive/analysis';

const fail: AnalysisResult = { verdict: 'fail', value: 0.9, reason: '0.9 is above the maximum 0.05' };
const pass: AnalysisResult = { verdict: 'pass', value: 0.01, reason: null };
const none: AnalysisResult = { verdict: 'inconclusive', value: null, reason: 'no data' };
const check = (o: Partial<Check>): Check => ({ now: 100, command: null, failed: null, notReady: null, analysis: null, changed: null, offline: { regions: [], reason: null }, ...o });
const o = { deadline: 1000, failureLimit: 3 };

test('judgeCheck: each case, and the failures it carries on', () => {
  const cases: [string, Check, { failures: number; last: AnalysisResult | null }, string | null, number][] = [
    ['a failed check below the limit holds', check({ analysis: fail }), { failures: 1, last: null }, null, 2],
    ['the limit-th failure fails at once, before the deadline', check({ analysis: fail }), { failures: 2, last: pass }, 'fail', 3],
    ['a failing last check at the deadline is not a pass', check({ now: 1000 }), { failures: 1, last: fail }, null, 1],
    ['a failing check at the deadline is not a pass', check({ now: 1000, analysis: fail }), { failures: 0, last: null }, null, 1],
    ['a pass after failures at the deadline passes', check({ now: 1200, analysis: pass }), { failures: 2, last: fail }, 'pass', 2],
    ['inconclusive at the deadline fails closed', check({ now: 1000 }), { failures: 0, last: none }, 'fail', 0],
    ['not ready at the deadline fails', check({ now: 1000, notReady: 'eu-west-1 0/1' }), { failures: 0, last: pass }, 'fail', 0],
    ['an offline region at the deadline holds', check({ now: 1000, offline: { regions: ['eu-west-1'], reason: null } }), { failures: 0, last: pass }, null, 0],
    ['an offline region past the grace fails', check({ offline: { regions: ['eu-west-1'], reason: 'region eu-west-1 is offline' } }), { failures: 0, last: null }, 'fail', 0],
    ['abort wins over everything but the limit', check({ command: 'abort', failed: 'x', analysis: fail }), { failures: 1, last: null }, 'abort', 2],
    ['promote skips a failing check below the limit', check({ command: 'promote', analysis: fail }), { failures: 0, last: null }, 'promote', 1],
    ['no analysis at the deadline passes', check({ now: 1000 }), { failures: 0, last: null }, 'pass', 0],
    ['a stop seen by a check ends the hold', check({ failed: 'stopped by operator' }), { failures: 0, last: null }, 'fail', 0],
  ];
  for (const [name, c, before, kind, failures] of cases) {
    const r = judgeCheck(c, before, o);
    assert.equal(r.end?.kind ?? null, kind, name);
    assert.equal(r.failures, failures, `${name}: failures`);
  }
  // A walk journaled before issue 23 replays under its old rule: a failing last check passed.
  assert.equal(judgeCheck(check({ now: 1000 }), { failures: 1, last: fail }, { ...o, legacy: true }).end?.kind, 'pass');
  const limit = judgeCheck(check({ analysis: fail }), { failures: 2, last: null }, o);
  assert.deepEqual(limit.end, { kind: 'fail', reason: 'analysis failed: 0.9 is above the maximum 0.05 (3 of failureLimit 3 checks failed)', signal: true });
});

test('superseded: only a run that began under an older generation, with the deployment running again', () => {
  assert.equal(superseded({ desiredState: 'running', desiredGeneration: 2 }, 0), true, 'stopped and started since');
  assert.equal(superseded({ desiredState: 'stopped', desiredGeneration: 1 }, 0), false, 'a stop alone: the walk ends it');
  assert.equal(superseded({ desiredState: 'running', desiredGeneration: 2 }, 2), false, 'the start\'s own run');
  assert.equal(superseded({ desiredState: 'running', desiredGeneration: 2 }, undefined), false, 'a journal from before generations');
});

test('a stop seen by a check is the operator\'s decision, not a failed signal; a failed instance is one', () => {
  assert.equal((judgeCheck(check({ failed: 'stopped by operator' }), { failures: 0, last: null }, o).end as { signal?: boolean }).signal, false);
  assert.equal((judgeCheck(check({ failed: 'canary instance failed in eu-west-1' }), { failures: 0, last: null }, o).end as { signal?: boolean }).signal, true);
});

test('yieldsToStart: a rollback for the canary\'s own failed signal stands after a stop and a start; one for the stop yields', () => {
  const restarted = { desiredState: 'running', desiredGeneration: 2 };
  assert.equal(yieldsToStart(restarted, 0, false), true, 'the stop\'s rollback yields to the start');
  assert.equal(yieldsToStart(restarted, 0, true), false, 'a failed analysis or instance rolls back anyway');
  assert.equal(yieldsToStart({ desiredState: 'running', desiredGeneration: 0 }, 0, false), false, 'nothing accepted since');
});

test('stepVerdict: a stop and a start since the walk began are the stop, not a changed table (chaos seed 72)', () => {
  const walk = { expected: [{ deploymentId: 'stable', weight: 100 }, { deploymentId: 'canary', weight: 0 }], generation: 0 };
  // The stop took the canary's entry (weight 0) out of the table; the start followed.
  const withdrawn = [{ deploymentId: 'stable', weight: 100 }];
  const row = (o: Partial<{ trafficCommand: string | null; desiredState: string; desiredGeneration: number }>) => ({ trafficCommand: null, desiredState: 'running', desiredGeneration: 0, ...o });
  assert.equal(stepVerdict(row({ desiredGeneration: 2 }), walk, withdrawn), 'stopped', 'stopped and started since');
  assert.equal(stepVerdict(row({ desiredState: 'stopped', desiredGeneration: 1 }), walk, withdrawn), 'stopped', 'stopped');
  assert.equal(stepVerdict(row({ trafficCommand: 'abort', desiredGeneration: 2 }), walk, withdrawn), 'abort', 'an abort first');
  assert.equal(stepVerdict(row({}), walk, withdrawn), 'changed', 'someone else changed the table');
  assert.equal(stepVerdict(row({}), walk, walk.expected), null, 'the walk\'s own table');
  assert.equal(stepVerdict(row({ desiredGeneration: 2 }), { ...walk, generation: undefined }, walk.expected), null, 'a journal from before generations cannot tell');
});

test('judgeCheck: the failure limit is judged before anything else the same check sees (issue 33, defect 4)', () => {
  const table = [{ deploymentId: 'stable', weight: 100 }];
  const cases: [string, Partial<Check>][] = [
    ['a changed table', { changed: table }],
    ['an abort', { command: 'abort' }],
    ['a promote', { command: 'promote' }],
    ['an offline region past the grace', { offline: { regions: ['eu-west-1'], reason: 'region eu-west-1 is offline' } }],
    ['an offline region', { offline: { regions: ['eu-west-1'], reason: null } }],
    ['the deadline', { now: 1000 }],
  ];
  for (const [name, over] of cases) {
    const r = judgeCheck(check({ ...over, analysis: fail }), { failures: 2, last: null }, o);
    assert.deepEqual(r.end, { kind: 'fail', reason: 'analysis failed: 0.9 is above the maximum 0.05 (3 of failureLimit 3 checks failed)', signal: true }, name);
  }
});

test('judgeCheck: an operator\'s promote is held while a target region is offline or not ready, as an early pass is (issue 33, defect 3)', () => {
  const promote = (over: Partial<Check>) => judgeCheck(check({ command: 'promote', ...over }), { failures: 0, last: null }, o).end?.kind ?? null;
  assert.equal(promote({}), 'promote', 'every region online and ready');
  assert.equal(promote({ offline: { regions: ['eu-west-1'], reason: null } }), null, 'a region offline inside its grace');
  assert.equal(promote({ notReady: 'eu-west-1 0/1' }), null, 'instances not ready');
  assert.equal(promote({ now: 1000, offline: { regions: ['eu-west-1'], reason: null } }), null, 'past the step\'s end, still offline: held');
  assert.equal(promote({ offline: { regions: ['eu-west-1'], reason: 'region eu-west-1 is offline' } }), 'fail', 'offline past the grace fails the walk');
  // A journal from before holds checked liveness has no offline field: its promote stands.
  assert.equal(judgeCheck({ now: 100, command: 'promote', failed: null, notReady: null, analysis: null }, { failures: 0, last: null }, o).end?.kind, 'promote');
});
