// The compare judge (issue 27) end to end: ctrl reads the canary's and the stable's series per
// region from a stand-in Prometheus (query_range, tests/helpers/prometheus-stand-in.ts) and rolls
// back a canary worse than its stable although both stay under any fixed threshold, promotes an
// equal one, does not blame the canary for a degradation of both, and names the one region
// where the canary is bad. The series are log-normal noise (σ 0.3) around levels each test sets
// before its canary exists, from the stable it finds (no test relies on another's leftovers).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { testStack, until, routeWeights, deploymentIn } from '../helpers/stack';
import { noisy, startStandInPrometheus, type Selector } from '../helpers/prometheus-stand-in';
import { events } from '../../src/store';
import type { LiveEvent } from '../../src/live-events';

const BOTH = ['us-east-1', 'eu-west-1'];
// The stand-in runs on 127.0.0.1 over plain http: allowed explicitly (the outbound policy).
const stack = await testStack({ ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
/** Levels per series; each test sets its own before creating its canary. */
let level: (s: Selector, t: number) => number = () => 0.01;
const prom = await startStandInPrometheus(null, { series: (s, t) => noisy(level(s, t), `${s.deployment}/${s.region}`, t) });
after(() => prom.close());
const seen: LiveEvent[] = [];
after(await events.listenEvents(stack.db.sql, (e) => void seen.push(e)));

const QUERY = 'app_error_ratio{deployment="$deployment",region="$region"}';
const compare = (pause: string, extra: Record<string, unknown> = {}) => ({
  type: 'canary',
  steps: [{ weight: 20, pause }],
  analysis: { interval: '300ms', judge: 'compare', prometheus: { url: prom.url, query: QUERY }, direction: 'lower-is-better', tolerance: 0.1, confidence: 0.95, minSamples: 20, ...extra },
});

async function create(strategy?: unknown): Promise<string> {
  // force: a rolled-back canary quarantines nginx:1.27, and each test deploys it again.
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: BOTH, replicas: 1, force: true, ...(strategy ? { strategy } : {}) } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id;
}
const finished = (id: string, ms = 30_000) => deploymentIn(stack, id, ['ready', 'failed', 'rolled_back'], ms);
const analysisEvents = (id: string) => seen.filter((e): e is Extract<LiveEvent, { type: 'deployment.analysis' }> => e.type === 'deployment.analysis' && e.deploymentId === id);

assert.equal((await finished(await create())).status, 'ready');

/** The environment's stable deployment now: the one backend at 100% (whatever the tests
 *  before this one promoted or rolled back). */
async function currentStable(): Promise<string> {
  const r = await stack.api('/v1/environments/default/traffic');
  const full = (r.body.backends as { deploymentId: string; weight: number }[]).filter((b) => b.weight === 100);
  assert.equal(full.length, 1, JSON.stringify(r.body));
  return full[0]!.deploymentId;
}

test('a canary at 3× its stable error ratio, both under any fixed threshold, is rolled back with the reason', async () => {
  const stable = await currentStable();
  level = (s) => (s.deployment === stable ? 0.01 : 0.03);
  const canary = await create(compare('60s'));
  const done = await finished(canary, 20_000);
  assert.equal(done.status, 'rolled_back');
  // The 20% split lives only until the check that fails (about an interval or two, under a
  // second), so it is read from the recorded traffic events, in commit order, not polled: the
  // split came first, the failing verdict while it stood, then the table back on the stable.
  const backends = (e: LiveEvent) => (e.type === 'deployment.traffic' ? e.backends.filter((b) => b.weight > 0).map((b) => `${b.deploymentId}:${b.weight}`).sort().join(',') : undefined);
  const order = await until(() => {
    const splitAt = seen.findIndex((e) => backends(e) === [`${stable}:80`, `${canary}:20`].sort().join(','));
    const failAt = seen.findIndex((e) => e.type === 'deployment.analysis' && e.deploymentId === canary && e.verdict === 'fail');
    const backAt = seen.findIndex((e, i) => i > splitAt && backends(e) === `${stable}:100`);
    return splitAt >= 0 && failAt >= 0 && backAt >= 0 && { splitAt, failAt, backAt };
  }, { what: 'the split, the failed check and the rollback recorded', show: () => seen.filter((e) => e.type === 'deployment.traffic' || ('deploymentId' in e && e.deploymentId === canary)).map((e) => backends(e) ?? `${e.type}:${'verdict' in e ? e.verdict : ''}`) });
  assert.ok(order.splitAt < order.failAt && order.failAt < order.backAt, `the canary was at 20% when its check failed, and the rollback came after the verdict (split ${order.splitAt}, fail ${order.failAt}, back ${order.backAt})`);
  const analysedBefore = seen.findIndex((e) => e.type === 'deployment.analysis' && e.deploymentId === canary);
  assert.ok(analysedBefore > order.splitAt, 'no check of the canary before it had its 20%');
  assert.match(done.error, /^analysis failed: in (us-east-1|eu-west-1): canary's value is [23]\.\d× the stable's \(p [=<] [\d.]+, 95% interval [\d.]+×-[\d.]+×\), over tolerance 1\.1×/);
  for (const r of BOTH) await until(async () => (await routeWeights(stack, r)).join(',') === `${stable}:100`, 10_000, `${r} back on stable`);
  // The evidence, in the deployment view and the event.
  const failed = done.analysis.checks.filter((c: { verdict: string }) => c.verdict === 'fail');
  assert.ok(failed.length >= 1, JSON.stringify(done.analysis.checks));
  const c = failed[0];
  assert.equal(c.judge, 'compare');
  assert.equal(c.method, 'mann-whitney');
  assert.ok(c.pValue < 0.05, `p ${c.pValue}`);
  assert.equal(c.baseline.deploymentId, stable);
  assert.ok(c.baseline.n >= 20 && c.canary.n >= 20, JSON.stringify(c));
  assert.ok(c.canary.median / c.baseline.median > 2 && c.canary.median / c.baseline.median < 4.5, JSON.stringify(c));
  assert.ok(c.shift.low > 0.1 * c.baseline.median && c.shift.low <= c.shift.estimate && c.shift.estimate <= c.shift.high, JSON.stringify(c.shift));
  assert.ok(done.error.includes(c.reason), `${done.error} quotes ${c.reason}`);
  // The first check came an interval after the canary got traffic, over that interval: it had
  // samples, not an empty window; under minSamples (20) it is inconclusive, never a pass. On a
  // loaded machine the check can come late enough (the interval is 300 ms) to have 20 already:
  // then it judges, and it must not pass.
  const first = done.analysis.checks[0];
  assert.ok(first.canary.n >= 5 && first.baseline.n >= 5, `the first check read the first interval: ${JSON.stringify(first)}`);
  if (Math.min(first.canary.n, first.baseline.n) < 20) {
    assert.equal(first.verdict, 'inconclusive');
    assert.match(first.reason, /too few samples/);
  } else assert.notEqual(first.verdict, 'pass');
  assert.ok(analysisEvents(canary).some((e) => e.judge === 'compare' && e.verdict === 'fail' && e.pValue === c.pValue && e.baseline?.deploymentId === stable));
  // Both series were read per region, with the template filled in for each deployment.
  for (const r of BOTH) for (const id of [stable, canary]) assert.ok(prom.ranges.some((q) => q.query === `app_error_ratio{deployment="${id}",region="${r}"}`), `${id} in ${r}`);
});

test('a canary equal to its stable is promoted', async () => {
  level = () => 0.01;
  const canary = await create(compare('2500ms'));
  const done = await finished(canary);
  assert.equal(done.status, 'ready', done.error);
  const last = done.analysis.checks.slice(-2);
  assert.deepEqual(last.map((c: { region: string }) => c.region).sort(), [...BOTH].sort());
  assert.equal(last.length, 2, JSON.stringify(done.analysis.checks));
  assertEvery(last, (c: { verdict: string; reason: string }) => c.verdict === 'pass' && /within tolerance 1\.1×/.test(c.reason), JSON.stringify(last));
});

test('an environment-wide degradation of both is not blamed on the canary', async () => {
  // Both go from 1% to 8% one interval after the canary's first check (the first range query
  // of this test), and stay there: the change falls inside the analysis, whenever the canary
  // got its traffic on this machine.
  const from = prom.ranges.length;
  level = (_s, t) => {
    const first = prom.ranges[from];
    return first && t >= first.end * 1000 + 300 ? 0.08 : 0.01;
  };
  const canary = await create(compare('5s'));
  const done = await finished(canary);
  assert.equal(done.status, 'ready', done.error);
  // A median of 1% noise (σ 0.3) is never above 4%; one of 8% always is.
  assert.ok(done.analysis.checks.some((c: { baseline: { median: number } }) => c.baseline.median > 0.04), `the degradation was in a window: ${JSON.stringify(done.analysis.checks.map((c: { baseline: { median: number } }) => c.baseline.median))}`);
  assert.ok(done.analysis.checks.some((c: { baseline: { median: number } }) => c.baseline.median < 0.02), 'and the level before it');
  assert.ok(!done.analysis.checks.some((c: { verdict: string }) => c.verdict === 'fail'));
});

test("one region's bad canary fails the whole canary, naming the region", async () => {
  const stable = await currentStable();
  level = (s) => (s.deployment !== stable && s.region === 'eu-west-1' ? 0.03 : 0.01);
  const canary = await create(compare('60s'));
  const done = await finished(canary, 20_000);
  assert.equal(done.status, 'rolled_back');
  assert.match(done.error, /^analysis failed: in eu-west-1: canary's value is/);
  assert.ok(!done.error.includes('in us-east-1'), done.error);
  const byRegion = (r: string) => done.analysis.checks.filter((c: { region: string }) => c.region === r);
  assert.ok(byRegion('eu-west-1').some((c: { verdict: string }) => c.verdict === 'fail'));
  assert.ok(!byRegion('us-east-1').some((c: { verdict: string }) => c.verdict === 'fail'));
  for (const r of BOTH) await until(async () => (await routeWeights(stack, r)).join(',') === `${stable}:100`, 10_000, `${r} back on stable`);
});

test('promoteEarly: a canary shown within tolerance ends its pause early', async () => {
  // Better than the stable: the canary's upper bound is well inside the tolerance quickly.
  const stable = await currentStable();
  level = (s) => (s.deployment === stable ? 0.01 : 0.006);
  const canary = await create(compare('60s', { promoteEarly: true }));
  const done = await finished(canary);
  assert.equal(done.status, 'ready', done.error);
  // Ended by the early decision (shown by its check), not by the 60 s pause running out.
  assert.ok(done.analysis.checks.some((c: { early?: boolean; reason: string }) => c.early && /clearly within tolerance/.test(c.reason)), JSON.stringify(done.analysis.checks.slice(-2)));
});
