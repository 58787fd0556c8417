// deploy --wait's view of a canary (src/cli/progress.ts, render.ts): the deployment's share of
// its environment's traffic and the last analysis check, folded from live events. Pure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyEvent, type ProgressState } from '../../src/cli/progress';
import { progressLines } from '../../src/cli/render';
import { eventConcerns } from '../../src/live-events';

const base: ProgressState = { id: 'dep-new', status: 'deploying', error: null, progressive: true, regions: [{ region: 'us-east-1', wanted: 1, running: 1, pending: 0, failed: 0, reason: null }] };

test('a traffic event sets the deployment\'s share; an analysis event its last check; both show on the status line', () => {
  let s = applyEvent(base, { type: 'deployment.traffic', environmentId: 'env', hostname: 'h', backends: [{ deploymentId: 'dep-old', weight: 90 }, { deploymentId: 'dep-new', weight: 10 }] });
  s = applyEvent(s, { type: 'deployment.analysis', deploymentId: 'dep-new', region: null, signal: 'prometheus', verdict: 'pass', value: 0.01, reason: null, min: 0, max: 0.05 });
  const [head] = progressLines(s, { withBars: false });
  assert.match(head!, /traffic 10%/);
  assert.match(head!, /prometheus pass \(0\.01\)/);
  // Another deployment's analysis leaves this one's view alone.
  const other = applyEvent(s, { type: 'deployment.analysis', deploymentId: 'dep-old', region: null, signal: 'prometheus', verdict: 'fail', value: 9, reason: null });
  assert.match(progressLines(other, { withBars: false })[0]!, /prometheus pass/);
  // Out of the table: 0%.
  const out = applyEvent(s, { type: 'deployment.traffic', environmentId: 'env', hostname: 'h', backends: [{ deploymentId: 'dep-old', weight: 100 }] });
  assert.match(progressLines(out, { withBars: false })[0]!, /traffic 0%/);
  // A rolling deploy's 100% on ready is not shown (it would only add a line).
  const rolling = applyEvent({ ...base, progressive: undefined }, { type: 'deployment.traffic', environmentId: 'env', hostname: 'h', backends: [{ deploymentId: 'dep-new', weight: 100 }] });
  assert.doesNotMatch(progressLines(rolling, { withBars: false })[0]!, /traffic/);
});

test('a traffic event concerns every deployment among its backends (the ?deploymentId= filter)', () => {
  const e = { type: 'deployment.traffic' as const, environmentId: 'env', hostname: 'h', backends: [{ deploymentId: 'a', weight: 50 }, { deploymentId: 'b', weight: 50 }] };
  assert.equal(eventConcerns(e, 'a'), true);
  assert.equal(eventConcerns(e, 'c'), false);
  assert.equal(eventConcerns({ type: 'deployment.status', deploymentId: 'a', environmentId: 'env', status: 'ready', error: null }, 'a'), true);
  assert.equal(eventConcerns({ type: 'rollout.wave', state: 's', wave: 0, waves: 1, succeeded: 0, failed: 0 }, 'a'), false);
});
