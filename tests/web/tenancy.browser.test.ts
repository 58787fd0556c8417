// The web view with a scoped API key (issue 26), in headless Chromium against ctrl alone: a
// read-only key signs in where the admin token does, sees its deployment but no action button
// and no view it may not use (regions, sentinel rollouts, audit); the admin token sees the audit
// page with the key's sign-in among its rows.
// Page-side expressions are strings: this file is checked without the DOM library.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testCtrl } from '../http/helpers';
import { insertDeploymentOf, makeKey, makeTenant } from '../e2e/tenancy-helpers';
import { buildWebView, launchBrowser, openPage, signedIn, visible } from './browser';

buildWebView();
const t = await testCtrl();
const browser = await launchBrowser();
const A = await makeTenant(t, 'a');
await insertDeploymentOf(t, A, 'dep-web-a');

test('a read-only key sees its deployment with no action buttons and no view it may not use', async () => {
  const reader = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const { page, context, problems } = await openPage(browser, `${t.url}/`);
  await signedIn(page, reader.key);
  await page.goto(`${t.url}/#/deployments/dep-web-a`);
  await visible(page, page.getByRole('heading', { name: 'Deployment dep-web-a' }), 'deployment view');
  const nav = page.getByRole('navigation', { name: 'Views' });
  await visible(page, nav.getByRole('link', { name: 'Deployments' }), 'deployments link');
  for (const hidden of ['Regions', 'Sentinels', 'Audit']) assert.equal(await nav.getByRole('link', { name: hidden }).count(), 0, `${hidden} hidden`);
  assert.equal(await page.getByRole('group', { name: 'Actions' }).count(), 0, 'no action buttons');
  assert.equal(await page.getByRole('button', { name: 'Stop', exact: true }).count(), 0);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the admin token sees the audit page, with rows of the calls made', async () => {
  const { page, context } = await openPage(browser, `${t.url}/`);
  await signedIn(page, t.adminToken);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Audit' }).click();
  await visible(page, page.getByTestId('audit'), 'audit table');
  const text = await page.getByTestId('audit').innerText();
  assert.match(text, /workspace\.create/);
  assert.match(text, /key\.create/);
  await context.close();
});

test('a key of one environment lands on its own environment\'s deployments', async () => {
  const envKey = await makeKey(t, { workspaceId: A.workspaceId, projectId: A.projectId, environmentId: A.environmentId }, ['deployments.read']);
  const { page, context } = await openPage(browser, `${t.url}/`);
  await signedIn(page, envKey.key);
  const link = page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Deployments' });
  await visible(page, link, 'deployments link');
  assert.match((await link.getAttribute('href')) ?? '', new RegExp(`env=${A.environmentId}`));
  await link.click();
  await visible(page, page.locator('tr[data-id="dep-web-a"]'), 'its deployment listed');
  await context.close();
});
