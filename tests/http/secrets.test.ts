// Secrets in views (issue 16 item 2): deployment env values and Slack webhook URLs are
// credentials. No response of the public API and no live event may carry them; env shows keys.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { until } from '../helpers/wait';
import { testCtrl } from './helpers';

const ENV_SECRET = 'env-secret-value-7f3a9c';
const HOOK_SECRET = 'B0HOOKSECRETXYZ';

const hook = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end('ok'));
});
await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
after(() => new Promise<void>((r) => hook.close(() => r())));
const hookPort = (hook.address() as AddressInfo).port;
const t = await testCtrl({ outboundAllow: `127.0.0.1:${hookPort}` });

/** Every event the WebSocket delivers while the test runs, as raw text. */
const events: string[] = [];
const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/events`, { headers: { authorization: `Bearer ${t.adminToken}` } });
ws.on('message', (d) => events.push(String(d)));
await new Promise<void>((resolve, reject) => {
  ws.once('open', () => resolve());
  ws.once('error', reject);
});
after(() => ws.close());

function assertClean(what: string, text: string): void {
  assert.ok(!text.includes(ENV_SECRET), `${what} carries an env value: ${text.slice(0, 500)}`);
  assert.ok(!text.includes(HOOK_SECRET), `${what} carries the webhook URL: ${text.slice(0, 500)}`);
}

test('no view and no live event carries an env value or a webhook URL; env shows its keys', async () => {
  const responses: [string, string][] = [];
  const call = async (path: string, init?: { method?: string; body?: unknown }) => {
    const r = await t.api(path, init);
    responses.push([`${init?.method ?? (init?.body ? 'POST' : 'GET')} ${path}`, r.text]);
    return r;
  };

  const rollout = await call('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', slackWebhookUrl: `http://127.0.0.1:${hookPort}/services/T000/${HOOK_SECRET}` } });
  assert.equal(rollout.status, 202, rollout.text);
  const created = await call('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1, env: { API_KEY: ENV_SECRET, MODE: 'prod' } } });
  assert.equal(created.status, 202, created.text);
  const id = created.body.id as string;
  // The workflow has moved it on (a status event) and written its sentinel.
  await until(async () => (await t.api(`/v1/deployments/${id}`)).body.status === 'deploying', 15_000, 'deploying');
  await until(() => events.some((e) => e.includes(id)) && events.some((e) => e.includes('rollout.wave')), 15_000, 'events seen');

  const one = await call(`/v1/deployments/${id}`);
  await call('/v1/deployments?environmentId=default');
  await call('/v1/sentinels');
  await call('/v1/sentinel-rollouts/current');
  await call(`/v1/deployments/${id}/rollback`, { method: 'POST' });
  const list = await call('/v1/deployments?environmentId=default');
  assert.equal(list.body.deployments.length, 2, 'the rollback is listed too');

  for (const [what, text] of responses) assertClean(what, text);
  for (const e of events) assertClean('live event', e);
  assert.deepEqual(one.body.envKeys, ['API_KEY', 'MODE']);
  assert.equal(one.body.env, undefined);
  for (const d of list.body.deployments) assert.deepEqual(d.envKeys, ['API_KEY', 'MODE']);
});

test('invocation views redact the webhook URL and env values, inputs and journals alike', async () => {
  const list = await t.api('/v1/invocations?limit=1000');
  assertClean('GET /v1/invocations', list.text);
  for (const inv of list.body.invocations) assertClean(`GET /v1/invocations/${inv.id}`, (await t.api(`/v1/invocations/${inv.id}`)).text);
});
