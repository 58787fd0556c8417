// The compare judge on the deployment page (issue 27), in headless Chromium against a real ctrl
// (in-process stack, two regions) and the stand-in range Prometheus: a canary 3× worse than its
// stable in one region is rolled back, and its page plots both series per region with each
// region's verdict and reason (the bad region fail, the other pass or inconclusive).
// Page-side expressions are strings: this file is checked without the DOM library.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, deploymentsOf } from '../helpers/stack';
import { noisy, startStandInPrometheus } from '../helpers/prometheus-stand-in';
import { buildWebView, launchBrowser, openPage, screenshot, signedIn, visible } from './browser';

buildWebView();
const stack = await testStack({ ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
const browser = await launchBrowser();
const BOTH = ['us-east-1', 'eu-west-1'];
let canaryId = '';
const prom = await startStandInPrometheus(null, { series: (s, t) => noisy(s.deployment === canaryId && s.region === 'eu-west-1' ? 0.03 : 0.01, `${s.deployment}/${s.region}`, t) });
after(() => prom.close());
const { create, status } = deploymentsOf(stack, BOTH, 60_000);

test("a rolled-back canary's page plots both series per region with the verdicts and reasons", async () => {
  const stable = await create();
  assert.equal((await status(stable, ['ready'])).status, 'ready');
  canaryId = await create({
    type: 'canary',
    steps: [{ weight: 20, pause: '60s' }],
    analysis: { interval: '300ms', judge: 'compare', prometheus: { url: prom.url, query: 'app_error_ratio{deployment="$deployment",region="$region"}' } },
  });
  const done = await status(canaryId, ['rolled_back', 'ready', 'failed']);
  assert.equal(done.status, 'rolled_back', done.error);
  const { page, context, problems } = await openPage(browser, stack.ctrl.url + '/');
  await signedIn(page, stack.adminToken);
  await page.evaluate(`location.hash = '#/deployments/${canaryId}'`);
  const eu = page.locator('[data-testid="judgement"][data-region="eu-west-1"]');
  await visible(page, eu, 'the eu-west-1 judgement');
  assert.equal(await eu.getAttribute('data-verdict'), 'fail');
  assert.match(await eu.innerText(), /eu-west-1: fail — canary's value is [\d.]+× the stable's \(p [<=] [\d.]+, 95% interval/);
  assert.match(await eu.innerText(), new RegExp(`stable ${stable} against canary`));
  for (const r of BOTH) {
    const fig = page.locator(`[data-testid="judgement"][data-region="${r}"]`);
    for (const which of ['stable', 'canary']) {
      const d = (await fig.locator(`[data-testid="series-${which}"]`).getAttribute('d')) ?? '';
      assert.ok((d.match(/L/g) ?? []).length >= 10, `${r} ${which} series plotted: ${d.slice(0, 80)}`);
    }
  }
  assert.notEqual(await page.locator('[data-testid="judgement"][data-region="us-east-1"]').getAttribute('data-verdict'), 'fail');
  // Each check's estimate and intervals over time against the tolerance (issue 37): the last one failed, above the tolerance line.
  const trail = eu.locator('[data-testid="shift-chart"]');
  assert.ok(Number(await trail.getAttribute('data-points')) >= 1, 'checks plotted');
  assert.equal(await eu.locator('[data-testid="shift-check"]').last().getAttribute('data-verdict'), 'fail');
  assert.match((await trail.locator('[data-testid="shift-tolerance"] title').textContent()) ?? '', /^tolerance 1\.1×$/);
  await page.getByRole('heading', { name: 'Canary judgement' }).scrollIntoViewIfNeeded();
  await screenshot(page, 'canary-judgement');
  assert.deepEqual(problems, []);
  await context.close();
});
