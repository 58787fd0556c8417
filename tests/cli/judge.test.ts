// The compare judge in the CLI (issue 27): `deploy --judge compare --direction … --tolerance …`
// nests into the strategy's analysis, a 400 on those fields names the flag, and `--wait`'s view
// prints each region's verdict with its reason. Pure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deployFlagFor, strategyFromFlags } from '../../src/cli/commands/deploy';
import { applyEvent, type ProgressState } from '../../src/cli/progress';
import { progressLines } from '../../src/cli/render';

test('compare flags nest into the analysis; absent ones are left to the server', () => {
  const s = strategyFromFlags({ steps: [10, 50], pause: '1m', analysisQuery: 'q{deployment="$deployment"}', prometheusUrl: 'http://p:9090', judge: 'compare', direction: 'lower-is-better', tolerance: 0.1 });
  assert.deepEqual(s, {
    type: 'canary',
    steps: [{ weight: 10, pause: '1m' }, { weight: 50, pause: '1m' }],
    analysis: { judge: 'compare', direction: 'lower-is-better', tolerance: 0.1, prometheus: { url: 'http://p:9090', query: 'q{deployment="$deployment"}' } },
  });
  const more = strategyFromFlags({ steps: [10], analysisQuery: 'q', prometheusUrl: 'http://p:9090', judge: 'compare', confidence: 0.99, minSamples: 30, promoteEarly: true }) as { analysis: Record<string, unknown> };
  assert.equal(more.analysis.confidence, 0.99);
  assert.equal(more.analysis.minSamples, 30);
  assert.equal(more.analysis.promoteEarly, true);
  for (const [field, flag] of [['strategy.analysis.judge', '--judge'], ['strategy.analysis.direction', '--direction'], ['strategy.analysis.tolerance', '--tolerance'], ['strategy.analysis.minSamples', '--min-samples']]) assert.equal(deployFlagFor(field!), flag);
});

test("--wait prints each region's compare verdict with its reason on the region's line", () => {
  const base: ProgressState = {
    id: 'dep-new', status: 'deploying', error: null, progressive: true,
    regions: ['eu-west-1', 'us-east-1'].map((region) => ({ region, wanted: 1, running: 1, pending: 0, failed: 0, reason: null })),
  };
  const reason = "canary's value is 3.1× the stable's (p = 0.0004, 95% interval 2.4×-3.9×), over tolerance 1.1×";
  let s = applyEvent(base, { type: 'deployment.analysis', deploymentId: 'dep-new', region: 'eu-west-1', signal: 'prometheus', verdict: 'fail', value: null, reason, judge: 'compare' });
  s = applyEvent(s, { type: 'deployment.analysis', deploymentId: 'dep-new', region: 'us-east-1', signal: 'prometheus', verdict: 'pass', value: null, reason: 'within', judge: 'compare' });
  const lines = progressLines(s, { withBars: false });
  assert.ok(lines.find((l) => l.includes('eu-west-1'))!.endsWith(`fail: ${reason}`), lines.join('\n'));
  assert.match(lines.find((l) => l.includes('us-east-1'))!, /pass: within$/);
  // Another deployment's verdict leaves this view alone.
  const other = applyEvent(s, { type: 'deployment.analysis', deploymentId: 'dep-old', region: 'us-east-1', signal: 'prometheus', verdict: 'fail', value: null, reason: 'x', judge: 'compare' });
  assert.match(progressLines(other, { withBars: false }).find((l) => l.includes('us-east-1'))!, /pass: within$/);
});
