// The web view in headless Chromium against a real ctrl (in-process stack, two regions): sign
// in, a deployment created through the API appears and turns ready without a reload, stop it
// from the page, a wrong token refused, a rolling deployment's traffic and why it cannot be
// aborted, regions (an offline one flagged), and the token never in a URL or in storage other
// than the tab's. Canaries and blue-green are driven in canary.browser.test.ts.
// Page-side expressions are strings: this file is checked without the DOM library.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { buildWebView, launchBrowser, openPage, screenshot, signedIn, signIn, visible } from './browser';

buildWebView();
// Pods become ready after a second, so the page shows a deployment before it is ready.
const stack = await testStack({ readyDelayMs: 1000 });
const browser = await launchBrowser();
const url = stack.ctrl.url + '/';

test('a wrong token is refused in the API\'s words and nothing is stored', async () => {
  const { page, context, problems, failed } = await openPage(browser, url);
  await signIn(page, 'not-the-token');
  const alert = page.getByRole('alert');
  await alert.waitFor();
  assert.match(await alert.innerText(), /invalid admin token/);
  assert.match(await alert.innerText(), /ERR_/);
  assert.equal(await page.evaluate('sessionStorage.length + localStorage.length'), 0);
  assert.ok(await page.getByLabel('Admin token').isVisible(), 'still on the sign-in form');
  assert.deepEqual(problems, []);
  assert.deepEqual(failed, ['401 GET /v1/keys/self']);
  await context.close();
});

test('sign in, see a new deployment appear and turn ready live, open it, stop it from the page', async () => {
  const { page, context, problems, failed } = await openPage(browser, url);
  await signIn(page, stack.adminToken);
  await page.getByRole('heading', { name: 'Deployments' }).waitFor();
  await until(async () => (await page.getByTestId('live').getAttribute('data-state')) === 'live', 10_000, 'live');
  // Only this tab holds the token, and no URL carries it.
  assert.equal(await page.evaluate('localStorage.length'), 0);
  assert.equal(await page.evaluate('sessionStorage.length'), 1);
  assert.ok(!page.url().includes(stack.adminToken));
  // A reload would drop this marker: its survival proves the row arrived live.
  await page.evaluate('window.marker = 1');

  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 2 } });
  assert.equal(created.status, 202);
  const id: string = created.body.id;
  const row = page.locator(`tr[data-id="${id}"]`);
  await row.waitFor({ timeout: 15_000 });
  const first = await row.getAttribute('data-status');
  assert.notEqual(first, 'ready', 'seen before it was ready');
  await until(async () => (await row.getAttribute('data-status')) === 'ready', 20_000, 'ready on the page');
  await until(async () => /us-east-1 2\/2/.test(await row.innerText()) && /eu-west-1 2\/2/.test(await row.innerText()), 10_000, 'regions 2/2');
  assert.equal(await page.evaluate('window.marker'), 1, 'no reload');
  await screenshot(page, 'deployments');

  await row.getByRole('link', { name: id }).click();
  await page.getByRole('heading', { name: `Deployment ${id}` }).waitFor();
  await page.getByTestId('topology').waitFor();
  await page.getByTestId('steps').waitFor();
  await page.getByRole('button', { name: 'Stop', exact: true }).click();
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  await dialog.getByRole('button', { name: 'Stop deployment' }).click();
  await page.getByText('Stop requested.').waitFor();
  await until(async () => (await stack.api(`/v1/deployments/${id}`)).body.status === 'stopped', 20_000, 'stopped in ctrl');
  await page.locator('dl.facts .badge', { hasText: 'stopped' }).waitFor({ timeout: 15_000 });
  assert.ok(await page.getByRole('button', { name: 'Start', exact: true }).isEnabled(), 'start offered once stopped');
  assert.equal(await page.evaluate('window.marker'), 1, 'no reload');
  assert.deepEqual(problems, []);
  assert.deepEqual(failed, []);
  await context.close();
});

test('a rolling deployment: its traffic shown, abort refused with the reason; the canaries view has nothing shifting', async () => {
  const { page, context, problems, failed } = await openPage(browser, url);
  await signedIn(page, stack.adminToken);
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  const id: string = created.body.id;
  await page.goto(`${url}#/deployments/${id}`);
  const abort = page.getByRole('button', { name: 'Abort', exact: true });
  await visible(page, abort, () => `the Abort button (page problems ${JSON.stringify(problems)}, failed requests ${JSON.stringify(failed)})`);
  assert.ok(await abort.isDisabled(), 'abort is only offered for canary or blue-green');
  const why = await abort.getAttribute('aria-describedby');
  assert.ok(why, 'the disabled button names its reason');
  assert.equal(await page.locator(`[id="${why}"]`).innerText(), 'only canary or blue-green');
  // A rolling deploy that becomes ready takes all of the environment's traffic.
  const weight = (w: number) => page.locator(`[data-testid="traffic"] tr[data-deployment="${id}"][data-weight="${w}"]`);
  await visible(page, weight(100), 'the deployment at 100% in its traffic panel', 30_000);
  assert.deepEqual((await stack.api('/v1/environments/default/traffic')).body.backends, [{ deploymentId: id, weight: 100 }]);

  await page.getByRole('link', { name: 'Canaries' }).click();
  await visible(page, page.getByRole('heading', { name: /Canaries and blue-green/ }), 'the canaries view');
  await visible(page, weight(100), 'the deployment at 100% in the canaries view');
  assert.ok(await page.getByText('No canary or blue-green deployment is shifting traffic now.').isVisible());
  assert.equal(await page.locator('[data-unavailable]').count(), 0, 'ctrl serves progressive delivery');
  assert.deepEqual(problems, []);
  assert.deepEqual(failed, []);
  await context.close();
});

test('regions: an offline region is flagged', async () => {
  const { page, context, problems, failed } = await openPage(browser, url + '#/regions');
  await signedIn(page, stack.adminToken);
  await visible(page, page.getByTestId('regions'), 'the regions table');
  assert.equal(await page.locator('[data-unavailable]').count(), 0, 'ctrl serves GET /v1/regions');
  await stack.regions.get('eu-west-1')!.krane.close();
  const row = page.locator('tr[data-region="eu-west-1"]');
  await until(async () => (await row.getAttribute('data-status')) === 'offline', 90_000, 'eu-west-1 flagged offline');
  assert.match(await row.innerText(), /offline/);
  assert.equal(await page.locator('tr[data-region="us-east-1"]').getAttribute('data-status'), 'online');
  assert.deepEqual(problems, []);
  assert.deepEqual(failed, []);
  await context.close();
});

test('the page is readable on a narrow window and works from the keyboard', async () => {
  const { page, context } = await openPage(browser, url, { width: 400, height: 800 });
  await page.getByLabel('Admin token').focus();
  await page.keyboard.type(stack.adminToken);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Deployments' }).waitFor();
  const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
  assert.ok(overflow <= 0, `no sideways scrolling at 400px (overflow ${overflow}px)`);
  // Tab reaches the navigation and Enter follows a link.
  for (let i = 0; i < 10 && !(await page.evaluate("document.activeElement?.textContent === 'Regions'")); i++) await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Regions' }).waitFor();
  await context.close();
});
