// Progressive delivery in headless Chromium against a real ctrl (in-process stack, two regions)
// and a real Prometheus for the analysis: a canary's weights move live on its page and in the
// canaries view, whose chart draws the weight over time and the analysis values against their
// bounds; an abort from the page puts all traffic back on the stable deployment. A blue-green is
// seen held at 0% while it is analysed, then switched whole.
// Page-side expressions are strings: this file is checked without the DOM library.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { testStack, until, deploymentsOf } from '../helpers/stack';
import { prometheusMissing, startGauge, startPrometheus } from '../helpers/prometheus';
import { chartGeometry } from '../../src/web/app/models/canary';
import { buildWebView, launchBrowser, openPage, screenshot, signedIn, visible, type OpenPage } from './browser';

buildWebView();
// Prometheus listens on 127.0.0.1 over plain http: allowed explicitly (the outbound policy).
const stack = await testStack({ ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
const browser = await launchBrowser();
const url = stack.ctrl.url + '/';
const BOTH = ['us-east-1', 'eu-west-1'];

// Prometheus is required (scripts/ensure-tools.mjs installs it before `npm test`): without it
// the chart's analysis would go unchecked, so the file fails instead of skipping assertions.
assert.equal(prometheusMissing, false, `${prometheusMissing}: run node scripts/ensure-tools.mjs`);
const gauge = await startGauge('app_error_ratio', 0.01);
const prometheusUrl = await startPrometheus(gauge.port, 'app_error_ratio');
const analysis = { interval: '1s', failureLimit: 1, prometheus: { url: prometheusUrl, query: 'app_error_ratio', min: 0, max: 0.05 } };

const { create, status } = deploymentsOf(stack, BOTH, 60_000);
const traffic = async () => (await stack.api('/v1/environments/default/traffic')).body.backends.map((b: any) => `${b.deploymentId}:${b.weight}`).join(',');

/** Records every split the page's traffic table shows (as `id:weight,…`), so a step that came
 *  and went between two polls is still seen. It lives in the page: a reload would lose it. */
async function recordSplits(page: Page): Promise<void> {
  await page.evaluate(`(() => {
    window.__splits = [];
    const read = () => [...document.querySelectorAll('[data-testid="traffic"] tbody tr')].map((r) => r.dataset.deployment + ':' + r.dataset.weight).join(',');
    const note = () => { const s = read(); if (s && window.__splits[window.__splits.length - 1] !== s) window.__splits.push(s); };
    note();
    new MutationObserver(note).observe(document.body, { attributes: true, childList: true, subtree: true, characterData: true });
  })()`);
}
const splits = (page: Page): Promise<string[]> => page.evaluate('window.__splits');

/** Asserts `page` showed each of `expected` in this order (others may come between). */
async function showedInOrder(page: Page, expected: string[], what: string): Promise<void> {
  const seen = await splits(page);
  let from = 0;
  for (const s of expected) from = seen.indexOf(s, from) + 1 || Infinity;
  assert.ok(from !== Infinity, `${what} showed ${expected.join(' then ')} (saw ${seen.join(' | ')})`);
}

/** A traffic row showing `id` at `weight`. */
const row = (page: Page, id: string, weight: number) => page.locator(`[data-testid="traffic"] tr[data-deployment="${id}"][data-weight="${weight}"]`);

/** The weights the chart's step line of `id` went through, read back from its SVG path. */
async function chartedWeights(page: Page, id: string): Promise<number[]> {
  const d = (await page.locator(`[data-testid="canary-chart"][data-deployment="${id}"] path.weight`).getAttribute('d')) ?? '';
  const { plot } = chartGeometry({ weights: [], analysis: [] }, 0);
  const ys = [...d.matchAll(/(?:M[\d.]+ |V)([\d.]+)/g)].map((m) => Number(m[1]));
  return ys.map((y) => Math.round(((plot.bottom - y) / (plot.bottom - plot.top)) * 100));
}

async function signedInAt(hash: string): Promise<OpenPage> {
  const open = await openPage(browser, url);
  await signedIn(open.page, stack.adminToken);
  await open.page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  return open;
}

/** The deployment serving the environment alone (100%): the one a test before left, or a new one,
 *  so each test also runs alone by name. */
async function stableAtFull(): Promise<string> {
  const backends = (await stack.api('/v1/environments/default/traffic')).body.backends as { deploymentId: string; weight: number }[];
  const serving = backends.length === 1 && backends[0]!.weight === 100 ? backends[0]!.deploymentId : undefined;
  if (serving && (await stack.api(`/v1/deployments/${serving}`)).body.status === 'ready') return serving;
  const id = await create();
  await status(id, ['ready']);
  await until(async () => (await traffic()) === `${id}:100`, 30_000, 'stable at 100%');
  return id;
}

test('a canary moves live on its page and in the canaries view, charted with its analysis; abort from the page returns all traffic to the stable', async () => {
  const stable = await stableAtFull();

  const view = await signedInAt('#/canaries');
  await visible(view.page, row(view.page, stable, 100), 'the canaries view with the stable at 100%');
  await view.page.evaluate('window.marker = 1');
  await recordSplits(view.page);
  // The canary's page is opened in a second tab, signed in before the canary exists so that
  // only a hash change separates its creation from the page showing it.
  const detail = await signedInAt('#/deployments');
  // Recording from before the hash change: the page's first traffic table is seen too.
  await detail.page.evaluate('window.marker = 1');
  await recordSplits(detail.page);

  // The 20% step is long enough for a loaded machine to show it; the 50% one lasts until the abort.
  const canary = await create({ type: 'canary', steps: [{ weight: 20, pause: '8s' }, { weight: 50, pause: '10m' }], analysis });
  await detail.page.evaluate(`location.hash = '#/deployments/${canary}'`);
  await visible(detail.page, detail.page.getByRole('heading', { name: `Deployment ${canary}` }), 'the canary\'s page');

  for (const { page } of [detail, view]) await visible(page, row(page, canary, 50), 'the canary at 50%', 60_000);
  assert.equal(await traffic(), `${stable}:50,${canary}:50`, 'ctrl agrees');
  await showedInOrder(view.page, [`${stable}:100`, `${stable}:80,${canary}:20`, `${stable}:50,${canary}:50`], 'the canaries view');
  await showedInOrder(detail.page, [`${stable}:80,${canary}:20`, `${stable}:50,${canary}:50`], 'the canary\'s page');
  assert.match(await detail.page.locator('dl.facts').innerText(), /canary 20% \(pause 8s\) → 50% \(pause 10m\)/);

  const chart = view.page.locator(`[data-testid="canary-chart"][data-deployment="${canary}"]`);
  await visible(view.page, chart, 'the canary\'s chart');
  const line = await chartedWeights(view.page, canary);
  assert.deepEqual(line.filter((w) => w > 0), [20, 50], `the weight line steps 20% then 50% (it went ${line.join(' → ')})`);
  // A dozen checks (one a second, eight of them at 20%): the analysis goes on at 50%, and the
  // screenshot shows both steps.
  await visible(view.page, chart.locator('circle.dot.v-pass').nth(11), 'a dozen passing analysis values on the chart', 60_000);
  assert.deepEqual(await chart.locator('line.bound title').allTextContents(), ['min 0', 'max 0.05']);
  assert.match(await chart.locator('figcaption').innerText(), /weight 50% .*last analysis 0\.01 \(pass\)/);
  await screenshot(view.page, 'canary');

  const abort = detail.page.getByRole('button', { name: 'Abort', exact: true });
  assert.ok(await abort.isEnabled(), 'abort offered while the canary walks');
  await abort.click();
  const dialog = detail.page.getByRole('dialog');
  await visible(detail.page, dialog, 'the abort confirmation');
  assert.match(await dialog.innerText(), new RegExp(`Abort ${canary}\\?[\\s\\S]*All traffic goes back to the stable deployment`));
  await dialog.getByRole('button', { name: 'Abort' }).click();
  await visible(detail.page, detail.page.getByText('Abort requested.'), 'the abort acknowledged');

  const done = await status(canary, ['rolled_back', 'ready', 'failed'], 30_000);
  assert.equal(done.status, 'rolled_back');
  assert.match(done.error, /aborted by operator/);
  assert.equal(await traffic(), `${stable}:100`);
  for (const { page } of [detail, view]) await visible(page, row(page, stable, 100), 'all traffic back on the stable', 30_000);
  await visible(detail.page, detail.page.locator('dl.facts .badge', { hasText: 'rolled back' }), 'the canary rolled back on its page');
  assert.match(await detail.page.getByTestId('deployment-error').innerText(), /aborted by operator/);
  assert.ok(await abort.isDisabled(), 'nothing left to abort');
  await showedInOrder(detail.page, [`${stable}:50,${canary}:50`, `${stable}:100`], 'the canary\'s page');
  await showedInOrder(view.page, [`${stable}:50,${canary}:50`, `${stable}:100`], 'the canaries view');
  // The chart keeps the canary (it was analysed) and draws its weight back to 0.
  let after: number[] = [];
  await until(async () => (after = await chartedWeights(view.page, canary)).at(-1) === 0, 15_000, 'the chart\'s line back at 0').catch((err: Error) => {
    throw new Error(`${err.message}; it went ${after.join(' → ')}`);
  });

  for (const { page, problems, failed, context } of [view, detail]) {
    assert.equal(await page.evaluate('window.marker'), 1, 'no reload');
    assert.deepEqual(problems, []);
    assert.deepEqual(failed, []);
    await context.close();
  }
});

test('a blue-green is seen at 0% while analysed, then switched whole; the old deployment stops after the delay', async () => {
  const stable = await stableAtFull();
  const view = await signedInAt('#/canaries');
  await visible(view.page, row(view.page, stable, 100), 'the canaries view with the stable at 100%');
  await view.page.evaluate('window.marker = 1');
  await recordSplits(view.page);

  // Checked three times, 2 s apart: six seconds at 0% for a loaded machine to show.
  const green = await create({ type: 'blue-green', scaleDownDelay: '2s', analysis: { ...analysis, interval: '2s' } });
  await visible(view.page, row(view.page, green, 100), 'the green deployment at 100%', 60_000);
  assert.equal((await status(green, ['ready', 'rolled_back', 'failed'])).status, 'ready');
  await showedInOrder(view.page, [`${stable}:100`, `${stable}:100,${green}:0`, `${green}:100`], 'the canaries view');
  // Never a split with traffic on both sides.
  assert.deepEqual((await splits(view.page)).filter((s) => s.includes(',') && !s.endsWith(':0')), []);
  const chart = view.page.locator(`[data-testid="canary-chart"][data-deployment="${green}"]`);
  await visible(view.page, chart, 'the green deployment\'s chart');
  assert.ok((await chart.locator('circle.dot.v-pass').count()) >= 3, 'three passing checks before the switch');
  await until(async () => (await chartedWeights(view.page, green)).at(-1) === 100, 15_000, 'the chart\'s line at 100%');
  await status(stable, ['stopped'], 30_000);
  assert.equal(await view.page.evaluate('window.marker'), 1, 'no reload');
  assert.deepEqual(view.problems, []);
  assert.deepEqual(view.failed, []);
  await view.context.close();
});
