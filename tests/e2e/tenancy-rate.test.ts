// The per-key request rate (--key-rate-limit): past its bucket a key gets 429 ERR_RATE_LIMITED
// with Retry-After; another key and the admin token are not held back by it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testCtrl } from '../http/helpers';
import { makeKey, makeTenant } from './tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 3 });
const A = await makeTenant(t, 'a');

test('a key past its rate gets 429 with Retry-After; another key is not affected', async () => {
  const busy = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const calm = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const answers = await Promise.all(Array.from({ length: 8 }, () => t.api(`/v1/environments/${A.environmentId}`, { token: busy.key })));
  const limited = answers.filter((r) => r.status === 429);
  assert.ok(limited.length >= 4, answers.map((r) => r.status).join(','));
  assert.equal(limited[0]!.body.error.code, 'ERR_RATE_LIMITED');
  const r = await fetch(`${t.url}/v1/environments/${A.environmentId}`, { headers: { authorization: `Bearer ${busy.key}` } });
  assert.equal(r.status, 429);
  assert.ok(Number(r.headers.get('retry-after')) >= 1, `retry-after ${r.headers.get('retry-after')}`);
  assert.equal((await t.api(`/v1/environments/${A.environmentId}`, { token: calm.key })).status, 200);
  assert.equal((await t.api(`/v1/environments/${A.environmentId}`)).status, 200);
});
