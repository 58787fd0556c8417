// The rollout view in headless Chromium against a real ctrl: four sentinels in waves of 1, 1
// and 2. A refused write in wave 2 pauses the rollout; the page shows the waves advance and the failure
// live, offers only the actions the paused state allows, and resumes it to completion. Also:
// a refused start shown in the API's words, and a lost event socket that reconnects and says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { newId } from '../../src/ids';
import { cilium, sentinels, tenancy, withTx } from '../../src/store';
import { sentinelObjectName } from '../../src/kube/manifests/names';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';
import { buildWebView, launchBrowser, openPage, screenshot, signIn } from './browser';

buildWebView();
// The production sentinel timeout (10 m): healthy sentinels converge however slow the machine
// is, and the wave-2 victim fails at once (a refused write), not by a short timeout.
const stack = await testStack({ regions: ['us-east-1'] });
const sim = stack.regions.get('us-east-1')!.sim.sim;
const browser = await launchBrowser();
const url = stack.ctrl.url + '/';

await withTx(stack.db.sql, async (tx) => {
  for (let i = 0; i < 4; i++) {
    const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
    await tenancy.insertEnvironment(tx, { ...scope, slug: `web${i}` });
    await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: 'us-east-1', image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
    await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region: 'us-east-1' });
  }
});
await until(async () => {
  const rows = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE health = 'healthy' AND running_image = 'sentinel:v1'`;
  return rows[0]!.n === 4;
}, 20_000, 'fleet healthy');

const phases = (page: import('playwright-core').Page) => page.locator('li.wave').evaluateAll((els) => els.map((e) => e.getAttribute('data-phase')));

test('a start the API refuses is shown in its words, per field', async () => {
  const { page, context } = await openPage(browser, url + '#/rollout');
  await signIn(page, stack.adminToken);
  await page.getByLabel('Sentinel image').fill('sentinel:v2');
  await page.getByLabel('Waves (cumulative %)').fill('1, 5, 50');
  await page.getByRole('button', { name: 'Start rollout' }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  assert.match(await alert.innerText(), /last wave must be 100/);
  assert.match(await alert.innerText(), /ERR_/);
  assert.equal((await stack.api('/v1/sentinel-rollouts/current')).body.state, 'idle');
  await context.close();
});

test('waves advance live; a failure pauses; only resume/cancel/rollback as allowed; resume from the page completes', async () => {
  const { page, context, problems } = await openPage(browser, url + '#/rollout');
  await signIn(page, stack.adminToken);
  await page.getByRole('heading', { name: 'Sentinels and rollout' }).waitFor();
  await until(async () => (await page.getByTestId('sentinels').locator('tbody tr').count()) === 4, 10_000, 'four sentinels listed');
  await page.evaluate('window.marker = 1');

  // The new image is held until the victim is chosen and refused, so wave 1 cannot finish and
  // wave 2 reach the victim first.
  sim.holdImage('sentinel:v2');
  const start = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', wavePercentages: [25, 50, 100] } });
  assert.equal(start.status, 202, JSON.stringify(start.body));
  const victim: string = (await stack.api('/v1/sentinel-rollouts/current/sentinels?wave=1')).body.sentinels[0].id;
  // The cluster refuses the victim's new desired state: it never converges on v2.
  sim.denyWrites(SENTINEL_NAMESPACE, sentinelObjectName(victim), 'sentinel:v2 is not allowed here');
  sim.releaseImage('sentinel:v2');

  await page.getByTestId('waves').waitFor({ timeout: 15_000 });
  await until(async () => (await phases(page))[0] === 'done', 60_000, 'wave 1 done on the page');
  await until(async () => (await page.getByTestId('rollout-state').innerText()).includes('paused'), 60_000, 'paused on the page');
  assert.deepEqual(await phases(page), ['done', 'failed', 'waiting']);
  assert.match(await page.getByTestId('failed').innerText(), new RegExp(victim));
  assert.ok(await page.getByRole('button', { name: 'Resume' }).isEnabled());
  assert.ok(await page.getByRole('button', { name: 'Cancel', exact: true }).isEnabled());
  assert.ok(await page.getByRole('button', { name: 'Roll back' }).isEnabled());
  await screenshot(page, 'rollout');

  sim.allowWrites(SENTINEL_NAMESPACE, sentinelObjectName(victim));
  // The click only sends the resume: until the handler saves, the stored state is still the
  // pause seen above, so a pause counts only when it is a newer one.
  const pausedAt = (await stack.api('/v1/sentinel-rollouts/current')).body.updatedAt;
  await page.getByRole('button', { name: 'Resume' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Resume' }).click();
  const settled = await until(async () => {
    const c = (await stack.api('/v1/sentinel-rollouts/current')).body;
    return c.state === 'completed' || (c.state === 'paused' && c.updatedAt !== pausedAt) ? c : undefined;
  }, 90_000, 'rollout settled after resume');
  assert.equal(settled.state, 'completed', `failed: ${JSON.stringify(settled.failedIds)}`);
  await until(async () => (await page.getByTestId('rollout-state').innerText()).includes('completed'), 15_000, 'completed on the page');
  assert.deepEqual(await phases(page), ['done', 'failed', 'done']);
  assert.equal(await page.getByTestId('succeeded').locator('li').count(), 3);
  await until(async () => (await page.getByTestId('sentinels').innerText()).split('sentinel:v2').length - 1 === 4, 10_000, 'every sentinel shows the new image');
  // Completed: nothing to resume, cancel or roll back; a new rollout can start.
  assert.ok(await page.getByRole('button', { name: 'Resume' }).isDisabled());
  assert.ok(await page.getByRole('button', { name: 'Cancel', exact: true }).isDisabled());
  assert.ok(await page.getByRole('button', { name: 'Roll back' }).isDisabled());
  assert.ok(await page.getByRole('button', { name: 'Start rollout' }).isVisible());
  assert.equal(await page.evaluate('window.marker'), 1, 'no reload');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a lost event socket is reported, reconnects, and the page is live again', async () => {
  const { page, context } = await openPage(browser, url);
  await signIn(page, stack.adminToken);
  const live = page.getByTestId('live');
  await until(async () => (await live.getAttribute('data-state')) === 'live', 10_000, 'live');
  // Records every state the header shows, so a short outage is not missed between polls.
  await page.evaluate(`(() => {
    const el = document.querySelector('[data-testid="live"]');
    window.__liveStates = [];
    new MutationObserver(() => window.__liveStates.push(el.dataset.state + ': ' + el.textContent)).observe(el, { attributes: true, childList: true, subtree: true, characterData: true });
  })()`);
  await stack.restartCtrl();
  await until(async () => (await live.getAttribute('data-state')) === 'live', 30_000, 'live again');
  const seen: string[] = await page.evaluate('window.__liveStates');
  assert.ok(seen.some((s) => s.startsWith('reconnecting: Connection lost')), `the header said the connection was lost (saw ${seen.join(' | ')})`);
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  await page.locator(`tr[data-id="${created.body.id}"]`).waitFor({ timeout: 15_000 });
  await context.close();
});
