// The compare judge's evidence over time (issue 37): one region's checks read leniently from
// `analysis.checks[]`, drawn as estimate, interval and anytime interval per check against
// equality and the tolerance. Pure model, and the component rendered to a string.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { h } from 'preact';
import { render } from 'preact-render-to-string';
import { shiftGeometry, shiftTrail } from '../../../src/web/app/models/shift';
import { ShiftChart } from '../../../src/web/app/views/shift-chart';

/** A compare check as GET /v1/deployments/:id lists it (unbounded ends as null, as JSON has them). */
const check = (at: string, region: string, verdict: string, median: number, shift: Record<string, unknown> | null) => ({
  at,
  judge: 'compare',
  region,
  verdict,
  baseline: { deploymentId: 'dep-a', n: 30, median },
  canary: { n: 30, median: median * 1.5 },
  shift,
});

const CHECKS = [
  check('2026-11-28T10:00:10Z', 'eu-west-1', 'inconclusive', 0.01, null),
  check('2026-11-28T10:00:20Z', 'eu-west-1', 'pass', 0.01, { estimate: 0.004, low: 0.001, high: 0.007, coverage: 0.95, reachable: true, tolerance: 0.001, anytime: { low: null, high: 0.006 } }),
  { judge: 'threshold', region: null, verdict: 'pass', value: 3 },
  check('2026-11-28T10:00:20Z', 'us-east-1', 'pass', 0.01, { estimate: 0, low: -0.001, high: 0.001, coverage: 0.95, reachable: true, tolerance: 0.001, anytime: { low: -0.003, high: 0.003 } }),
  check('2026-11-28T10:00:30Z', 'eu-west-1', 'fail', 0.01, { estimate: 0.005, low: 0.003, high: 0.007, coverage: 0.95, reachable: true, tolerance: 0.001, anytime: { low: 0.001, high: 0.009 } }),
  'junk',
];

test("one region's checks with a shift, oldest first; null ends are unbounded", () => {
  const eu = shiftTrail(CHECKS, 'eu-west-1');
  assert.deepEqual(eu.map((p) => p.verdict), ['pass', 'fail']);
  assert.equal(eu[0]!.anytimeLow, -Infinity);
  assert.equal(eu[0]!.anytimeHigh, 0.006);
  assert.equal(eu[1]!.t - eu[0]!.t, 10_000);
  assert.deepEqual(shiftTrail(undefined, 'eu-west-1'), []);
  assert.deepEqual(shiftTrail(CHECKS, 'ap-south-1'), []);
});

test('as ratios of the stable: the tolerance a flat line at 1.1×, the fail above it, an unbounded end at the edge', () => {
  const g = shiftGeometry(shiftTrail(CHECKS, 'eu-west-1'));
  assert.equal(g.units, 'ratio');
  assert.equal(g.toleranceLabel, 'tolerance 1.1×');
  const tolY = Number(/^M[\d.]+ ([\d.]+)H/.exec(g.tolerancePath)![1]);
  const [pass, fail] = g.marks;
  // Higher on the page is a smaller y: the failed check's estimate (1.5×) is above the tolerance,
  // its anytime interval above equality (1×).
  assert.ok(fail!.y < tolY && fail!.anyLow < g.equalY, JSON.stringify({ fail, tolY, eq: g.equalY }));
  assert.ok(pass!.openLow && !pass!.openHigh, 'the first anytime interval has no lower bound yet');
  assert.equal(pass!.anyLow, g.plot.bottom);
  assert.ok(pass!.x < fail!.x);
  assert.match(fail!.title, /^fail: 1\.5×, interval 1\.3× to 1\.7× \(covers 95%\); anytime 1\.1× to 1\.9×$/);
});

test('without a stable level to divide by, differences, with the tolerance as a step line', () => {
  const zero = [
    check('2026-11-28T10:00:20Z', 'r', 'pass', 0, { estimate: 0.002, low: 0, high: null, coverage: 0.95, reachable: true, tolerance: 0, anytime: { low: 0, high: null } }),
    check('2026-11-28T10:00:30Z', 'r', 'fail', 0.001, { estimate: 0.003, low: 0.001, high: 0.006, coverage: 0.95, reachable: true, tolerance: 0.0001, anytime: { low: 0.0005, high: null } }),
  ];
  const g = shiftGeometry(shiftTrail(zero, 'r'));
  assert.equal(g.units, 'difference');
  assert.match(g.tolerancePath, /^M[\d.]+ [\d.]+H[\d.]+V[\d.]+H[\d.]+$/);
  assert.ok(g.marks[0]!.openHigh);
});

test('the chart renders per check with its verdict, an out-of-reach interval dashed, and a legend', () => {
  const small = [check('2026-11-28T10:00:20Z', 'r', 'pass', 1, { estimate: 0.5, low: -1.5, high: 2.5, coverage: 0.9, reachable: false, tolerance: 0.1, anytime: { low: null, high: null } })];
  const html = render(h(ShiftChart, { checks: [...CHECKS, ...small], region: 'eu-west-1' }));
  assert.match(html, /data-testid="shift-chart" data-units="ratio" data-points="2"/);
  assert.equal((html.match(/data-testid="shift-check"/g) ?? []).length, 2);
  assert.match(html, /data-verdict="fail"/);
  assert.match(html, /tolerance 1\.1×/);
  assert.match(html, /the estimate \(dot\), its interval \(bar\), the anytime interval \(pale bar\)/);
  const one = render(h(ShiftChart, { checks: small, region: 'r' }));
  assert.match(one, /stroke-dasharray:2 2/);
  assert.match(one, /covers 90%, too few samples for its level/);
  assert.equal(render(h(ShiftChart, { checks: [], region: 'r' })), '');
});
