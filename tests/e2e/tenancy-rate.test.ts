// The per-key request rate (--key-rate-limit): past its bucket a key gets 429 ERR_RATE_LIMITED
// with Retry-After; another key and the admin token are not held back by it; tokens come back
// at the rate. The bucket runs on a clock the test holds (CtrlOverrides.keyClock), so how
// long the requests take on this machine cannot refill it: the counts are exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { realKeyClock } from '../../src/http/keys';
import { testCtrl } from '../http/helpers';
import { makeKey, makeTenant } from './tenancy-helpers';

const RATE = 3;
let now = Date.parse('2026-01-01T00:00:00Z');
const keyClock = { ...realKeyClock, now: () => now };
const t = await testCtrl({ keyRateLimit: RATE }, { keyClock });
const A = await makeTenant(t, 'a');
const get = (key: string) => t.api(`/v1/environments/${A.environmentId}`, { token: key });

test('a key past its rate gets 429 with Retry-After; another key is not affected', async () => {
  const busy = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const calm = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const answers = await Promise.all(Array.from({ length: 8 }, () => get(busy.key)));
  const statuses = answers.map((r) => r.status);
  assert.equal(statuses.filter((s) => s === 200).length, RATE, `a full bucket of ${RATE}, then none: ${statuses}`);
  assert.equal(statuses.filter((s) => s === 429).length, 8 - RATE, `${statuses}`);
  assert.equal(answers.find((r) => r.status === 429)!.body.error.code, 'ERR_RATE_LIMITED');
  const r = await fetch(`${t.url}/v1/environments/${A.environmentId}`, { headers: { authorization: `Bearer ${busy.key}` } });
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('retry-after'), '1', 'one token comes back within the second');
  assert.equal((await get(calm.key)).status, 200, 'another key has its own bucket');
  assert.equal((await t.api(`/v1/environments/${A.environmentId}`)).status, 200, 'the admin token is not limited');
});

test('tokens come back at the rate, up to a full bucket', async () => {
  const key = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
  const burst = async (n: number) => (await Promise.all(Array.from({ length: n }, () => get(key.key)))).map((r) => r.status);
  assert.deepEqual((await burst(RATE + 1)).sort(), [...Array(RATE).fill(200), 429], 'the first bucket');
  now += Math.ceil(1000 / RATE);
  assert.deepEqual((await burst(2)).sort(), [200, 429], 'a third of a second later: one token');
  now += 60_000;
  assert.deepEqual((await burst(RATE + 2)).sort(), [...Array(RATE).fill(200), 429, 429], 'a minute later: a full bucket, no more');
});
