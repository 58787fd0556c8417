// The web view in headless Chromium against a real ctrl (in-process stack, two regions): sign
// in, a deployment created through the API appears and turns ready without a reload, stop it
// from the page, a wrong token refused, regions (offline flagged, or "not available" while
// ctrl has no GET /v1/regions), and the token never in a URL or in storage other than the tab's.
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
  assert.deepEqual(failed, ['401 GET /v1/deployments']);
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
  // Only endpoints this ctrl does not serve yet (progressive delivery) may fail.
  assert.deepEqual(failed.filter((f) => !f.startsWith('404 GET /v1/environments/')), []);
  await context.close();
});

test('abort is offered only for progressive deployments; traffic says when this ctrl lacks it', async () => {
  const { page, context, problems, failed } = await openPage(browser, url);
  await signedIn(page, stack.adminToken);
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  const id: string = created.body.id;
  await page.goto(`${url}#/deployments/${id}`);
  // Abort needs progressive delivery; on a ctrl without it the route does not exist.
  const abort = page.getByRole('button', { name: 'Abort', exact: true });
  await visible(page, abort, () => `the Abort button (page problems ${JSON.stringify(problems)}, failed requests ${JSON.stringify(failed)})`);
  assert.ok(await abort.isDisabled(), 'abort is only offered for canary or blue-green');
  const traffic = page.locator('[data-unavailable], [data-testid="traffic"]');
  await traffic.first().waitFor();
  if (await page.locator('[data-unavailable]').count()) assert.match(await page.locator('[data-unavailable]').innerText(), /not available on this server/);
  // The canaries view says the same of the whole feature while ctrl lacks it.
  await page.getByRole('link', { name: 'Canaries' }).click();
  await page.getByRole('heading', { name: /Canaries and blue-green/ }).waitFor();
  const status = (await stack.api('/v1/environments/default/traffic')).status;
  if (status === 404) assert.match(await page.locator('[data-unavailable]').innerText(), /Progressive delivery \(canary and blue-green\): not available on this server/);
  else await page.getByTestId('traffic').waitFor();
  await context.close();
});

test('regions: an offline region is flagged (or the view says ctrl does not serve regions yet)', async (t) => {
  const { page, context, problems } = await openPage(browser, url + '#/regions');
  await signIn(page, stack.adminToken);
  await page.getByRole('heading', { name: 'Regions' }).waitFor();
  if ((await stack.api('/v1/regions')).status === 404) {
    await page.locator('[data-unavailable]').waitFor();
    assert.match(await page.locator('[data-unavailable]').innerText(), /Regions: not available on this server/);
    assert.deepEqual(problems, []);
    await context.close();
    t.skip('waits for GET /v1/regions (API.md); the 404 case is checked');
    return;
  }
  await page.getByTestId('regions').waitFor();
  await stack.regions.get('eu-west-1')!.krane.close();
  const row = page.locator('tr[data-region="eu-west-1"]');
  await until(async () => (await row.getAttribute('data-status')) === 'offline', 90_000, 'eu-west-1 flagged offline');
  assert.match(await row.innerText(), /offline/);
  assert.equal(await page.locator('tr[data-region="us-east-1"]').getAttribute('data-status'), 'online');
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
