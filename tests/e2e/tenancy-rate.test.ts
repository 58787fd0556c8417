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
  // Sent at once: 40 calls against a bucket of 3 refilled at 3 a second (all would pass only if
  // the machine took 12 s to answer them).
  const answers = await Promise.all(
    Array.from({ length: 40 }, async () => {
      const r = await fetch(`${t.url}/v1/environments/${A.environmentId}`, { headers: { authorization: `Bearer ${busy.key}` } });
      return { status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as any };
    }),
  );
  const limited = answers.filter((r) => r.status === 429);
  assert.ok(limited.length >= 1, answers.map((r) => r.status).join(','));
  assert.equal(limited[0]!.body.error.code, 'ERR_RATE_LIMITED');
  assert.ok(limited.every((r) => Number(r.retryAfter) >= 1), `retry-after ${limited.map((r) => r.retryAfter).join(',')}`);
  assert.equal((await t.api(`/v1/environments/${A.environmentId}`, { token: calm.key })).status, 200);
  assert.equal((await t.api(`/v1/environments/${A.environmentId}`)).status, 200);
});
