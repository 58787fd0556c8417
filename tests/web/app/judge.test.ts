// The deployment page's compare-judge model (issue 27): the newest verdict per region, read
// leniently, with both series as SVG paths on one axis. Pure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { latestJudgements, seriesGeometry } from '../../../src/web/app/models/judge';

test('the newest compare check per region wins; threshold checks and junk are skipped; an older plot is kept', () => {
  const checks = [
    { judge: 'compare', region: 'us-east-1', verdict: 'inconclusive', reason: 'too few samples', series: { baseline: [1, 2], canary: [1, 3] } },
    { judge: 'threshold', region: null, verdict: 'fail', value: 9 },
    { judge: 'compare', region: 'eu-west-1', verdict: 'fail', reason: "canary's value is 3.0× the stable's", method: 'mann-whitney', pValue: 0.001, baseline: { deploymentId: 'dep-a', n: 30, median: 0.01 }, canary: { n: 30, median: 0.03 }, series: { baseline: [0.01, 0.011], canary: [0.03, 0.029] } },
    { judge: 'compare', region: 'us-east-1', verdict: 'pass', reason: 'within', pValue: 'nope' },
    null,
    { judge: 'compare', region: 'ap-south-1', verdict: 'weird', series: { baseline: ['x'], canary: [] } },
  ];
  const got = latestJudgements(checks);
  assert.deepEqual(got.map((c) => [c.region, c.verdict]), [['ap-south-1', 'inconclusive'], ['eu-west-1', 'fail'], ['us-east-1', 'pass']]);
  const eu = got[1]!;
  assert.equal(eu.stableId, 'dep-a');
  assert.equal(eu.pValue, 0.001);
  assert.deepEqual(eu.series, { baseline: [0.01, 0.011], canary: [0.03, 0.029] });
  assert.equal(got[2]!.pValue, null);
  assert.deepEqual(got[2]!.series, { baseline: [1, 2], canary: [1, 3] }, 'the older plot stays when the newest check has none');
  assert.equal(got[0]!.series, null);
  assert.deepEqual(latestJudgements(undefined), []);
});

test('both series share one axis from 0: the worse canary is drawn higher', () => {
  const g = seriesGeometry({ baseline: [1, 1, 1], canary: [3, 3, 3] }, 640, 160);
  const ys = (d: string) => [...d.matchAll(/[ML][\d.]+ ([\d.]+)/g)].map((m) => Number(m[1]));
  assert.ok(Math.max(...ys(g.canaryPath)) < Math.min(...ys(g.baselinePath)), `${g.canaryPath} above ${g.baselinePath}`);
  assert.equal(ys(g.baselinePath).length, 3);
  assert.deepEqual(g.yTicks.map((t) => t.label), ['0', '3']);
  // Each path spans the plot's width.
  assert.ok(g.canaryPath.startsWith(`M${g.plot.left} `) && g.canaryPath.includes(`L${g.plot.right} `));
});
