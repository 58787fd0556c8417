// The fleet rollout's answers match the schemas the OpenAPI document names for them, strictly,
// on a running stack (openapi-responses.test.ts does the rest of the API): a rollout to an image
// whose sentinels crash-loop pauses at each wave, so start, the current view and its pages,
// resume, cancel and rollback (each as a wait and as ?wait=false) are all seen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { newId } from '../../src/ids';
import { cilium, sentinels, tenancy, withTx } from '../../src/store';
import { conformance, documentedAnswers, ROLLOUT_PATHS } from './openapi-conformance';

// A crash-looping sentinel fails its deploy after sentinelTimeout: 2 s keeps each wave short.
const stack = await testStack({ regions: ['us-east-1'], ctrl: { settings: { sentinelTimeout: '2s' } } });
const { call, covered } = conformance(stack);

await withTx(stack.db.sql, async (tx) => {
  for (let i = 0; i < 4; i++) {
    const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
    await tenancy.insertEnvironment(tx, { ...scope, slug: `fleet${i}` });
    await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: 'us-east-1', image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
    await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region: 'us-east-1' });
  }
});

const state = async () => (await stack.api('/v1/sentinel-rollouts/current')).body.state as string;
const reaches = (states: string[]) => until(async () => states.includes(await state()), 30_000, `rollout ${states.join('/')}`);
const start = async () => {
  const r = await call('POST', '/v1/sentinel-rollouts', { body: { image: 'sentinel:crash-2', wavePercentages: [25, 50, 75, 100] } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await reaches(['paused']);
};

test('start, read, resume and roll back a paused rollout (rollback queued with ?wait=false)', async () => {
  await call('GET', '/v1/sentinel-rollouts/current');
  await start();
  const current = await call('GET', '/v1/sentinel-rollouts/current');
  assert.ok(current.body.failedIds.length > 0, JSON.stringify(current.body));
  await call('GET', '/v1/sentinel-rollouts/current', { query: { list: 'failed' } });
  await call('GET', '/v1/sentinel-rollouts/current/sentinels');
  assert.equal((await call('POST', '/v1/sentinel-rollouts/current/resume')).status, 200);
  await reaches(['paused']);
  assert.equal((await call('POST', '/v1/sentinel-rollouts/current/rollback', { query: { wait: 'false' } })).status, 202);
  await reaches(['cancelled']);
});

test('cancel then roll back, each waited for; cancel queued with ?wait=false', async () => {
  await start();
  assert.equal((await call('POST', '/v1/sentinel-rollouts/current/cancel')).status, 200);
  assert.equal((await call('POST', '/v1/sentinel-rollouts/current/rollback')).status, 200);
  await reaches(['cancelled']);
  await start();
  assert.equal((await call('POST', '/v1/sentinel-rollouts/current/cancel', { query: { wait: 'false' } })).status, 202);
  await reaches(['cancelled']);
});

test("every documented answer of the rollout was seen and matched its schema", () => {
  const mine = [...documentedAnswers().keys()].filter((k) => ROLLOUT_PATHS.test(k));
  assert.ok(mine.length > 0);
  assert.deepEqual(mine.filter((k) => !covered.has(k)), []);
});
