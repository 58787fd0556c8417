// Fleet rollouts on the in-process system: ten sentinels (ten environments, one region),
// waves of 1, 2, 3 and 4 ([10, 30, 60, 100]). Orders are made with the simulator, not timed: a
// failing sentinel is one whose writes the cluster refuses (a webhook's denial, FAILED at once,
// where a crash loop would fail only at the sentinel timeout, which a slow machine's healthy
// sentinels could reach too), and "in the middle of a wave" is a wave whose pods are held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testStack, until } from '../helpers/stack';
import { newId } from '../../src/ids';
import { cilium, sentinels, tenancy, withTx } from '../../src/store';
import { sentinelObjectName } from '../../src/kube/manifests/names';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';

// The Slack receivers listen on loopback over http: allow-listed (any port), as an operator would.
const stack = await testStack({ regions: ['us-east-1'], ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
const sim = stack.regions.get('us-east-1')!.sim.sim;
const WAVES = [10, 30, 60, 100];

const fleet: string[] = [];
await withTx(stack.db.sql, async (tx) => {
  for (let i = 0; i < 10; i++) {
    const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
    await tenancy.insertEnvironment(tx, { ...scope, slug: `env${i}` });
    const { sentinel } = await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: 'us-east-1', image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
    await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region: 'us-east-1' });
    fleet.push(sentinel.id);
  }
});
await until(async () => {
  const rows = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE health = 'healthy' AND running_image = 'sentinel:v1'`;
  return rows[0]!.n === 10;
}, 20_000, 'fleet healthy');

const current = async () => (await stack.api('/v1/sentinel-rollouts/current')).body;
const waitState = (states: string[], ms = 20_000) => until(async () => { const c = await current(); return states.includes(c.state) ? c : undefined; }, ms, `rollout ${states.join('/')}`);
const inWave = async (wave: number): Promise<string[]> => (await stack.api(`/v1/sentinel-rollouts/current/sentinels?wave=${wave}`)).body.sentinels.map((s: any) => s.id);
const images = async () => Object.fromEntries((await stack.db.sql<{ id: string; image: string }[]>`SELECT id, image FROM sentinels`).map((r) => [r.id, r.image]));

async function slackReceiver() {
  const posts: string[] = [];
  const server = createServer((req, res) => {
    let b = '';
    req.on('data', (c) => (b += c));
    req.on('end', () => {
      posts.push(JSON.parse(b).text);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, posts, close: () => new Promise<void>((r) => server.close(() => r())) };
}

test('invalid wave percentages are refused, nothing starts', async () => {
  const before = await current();
  const r = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', wavePercentages: [1, 5, 50] } });
  assert.equal(r.status, 400);
  assert.match(JSON.stringify(r.body.error.details), /last wave must be 100/);
  // Whatever ran before (idle, or an earlier test's rollout), it is as it was.
  assert.deepEqual(await current(), before);
});

test('all waves succeed → completed; Slack posts arrive in order', async () => {
  const slack = await slackReceiver();
  try {
    const r = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', wavePercentages: WAVES, slackWebhookUrl: slack.url } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.deepEqual(r.body.waves, [1, 2, 3, 4]);
    const done = await waitState(['completed', 'paused']);
    assert.equal(done.state, 'completed');
    assert.equal(done.slackWebhookUrl, `${new URL(slack.url).origin}/…`, 'the webhook (a credential) is not shown');
    const notifierKeys = (await stack.api('/v1/invocations?target=SlackNotifier')).body.invocations.map((i: any) => i.key);
    assert.ok(notifierKeys.length > 0 && notifierKeys.every((k: string) => /^[0-9a-f]{16}$/.test(k)), 'nor used as an object key');
    assertEvery(Object.values(await images()), (i) => i === 'sentinel:v2');
    await until(() => slack.posts.length >= 10, 5000, 'slack posts');
    const kinds = slack.posts.map((p) => p.replace(/^\[[^\]]*\] /, '').split(/[:(]/)[0]!.trim());
    assert.deepEqual(kinds, [
      'started', 'wave 1/4 started', 'wave 1/4 completed', 'wave 2/4 started', 'wave 2/4 completed',
      'wave 3/4 started', 'wave 3/4 completed', 'wave 4/4 started', 'wave 4/4 completed', 'completed',
    ]);
  } finally {
    await slack.close();
  }
});

test('a failing sentinel in wave 2 pauses; a second rollout is refused; resume finishes the later waves without retrying it', async () => {
  // Held until the victim is chosen and refused, so its wave cannot reach it first.
  sim.holdImage('sentinel:v3');
  const start = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v3', wavePercentages: WAVES } });
  assert.equal(start.status, 202);
  const victim = (await inWave(1))[0]!;
  // The cluster refuses the victim's new desired state: it never converges on v3.
  sim.denyWrites(SENTINEL_NAMESPACE, sentinelObjectName(victim), 'sentinel:v3 is not allowed here');
  sim.releaseImage('sentinel:v3');
  const paused = await waitState(['paused', 'completed']);
  assert.equal(paused.state, 'paused');
  assert.deepEqual(paused.failedIds, [victim]);
  assert.equal(paused.currentWave, 1);

  const again = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v4' } });
  assert.equal(again.status, 409);
  assert.equal(again.body.error.code, 'ERR_ROLLOUT_IN_PROGRESS');

  sim.allowWrites(SENTINEL_NAMESPACE, sentinelObjectName(victim));
  const resumed = await stack.api('/v1/sentinel-rollouts/current/resume', { method: 'POST' });
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
  const done = await waitState(['completed', 'paused']);
  assert.equal(done.state, 'completed', JSON.stringify(done));
  assert.deepEqual(done.failedIds, [victim], 'the failed sentinel is not retried');
  const after = await images();
  assert.equal(after[victim], 'sentinel:v3', 'its desired image was written before it failed');
  assert.equal(done.succeededIds.length, 9);

  // Roll back needs paused or cancelled: a completed rollout cannot.
  assert.equal((await stack.api('/v1/sentinel-rollouts/current/rollback', { method: 'POST' })).status, 409);
});

test('cancel stops before the next wave; rollback reverts the succeeded sentinels to their previous images', async () => {
  const before = await images();
  // Every sentinel's pods are held; the first wave's are let go once the plan is known, so the
  // rollout is in its second wave, unfinished, when the cancel arrives.
  for (const id of fleet) sim.holdWorkload(SENTINEL_NAMESPACE, sentinelObjectName(id));
  const start = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v5', wavePercentages: WAVES } });
  assert.equal(start.status, 202);
  const plan = await stack.api('/v1/sentinel-rollouts/current/sentinels');
  for (const id of await inWave(0)) sim.releaseWorkload(SENTINEL_NAMESPACE, sentinelObjectName(id));
  await until(async () => (await current()).currentWave >= 1, { what: 'wave 2 reached' });
  // The cancel queues behind the running wave: once it is queued, the wave may end.
  const cancelled = stack.api('/v1/sentinel-rollouts/current/cancel', { method: 'POST' });
  await until(async () => (await stack.db.sql`SELECT 1 FROM engine_invocations WHERE service = 'SentinelRolloutService' AND handler = 'cancel'`).length > 0, { what: 'the cancel queued' });
  for (const id of fleet) sim.releaseWorkload(SENTINEL_NAMESPACE, sentinelObjectName(id));
  const cancel = await cancelled;
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
  assert.equal(cancel.body.state, 'cancelled');
  // Evidence, not a pause: the runWave queued before the cancel must have run (and found the
  // rollout cancelled) and no rollout invocation may be left to run; only then can nothing
  // more touch a sentinel, and the untouched ones are checked.
  await until(async () => {
    const list = (await stack.api('/v1/invocations?target=SentinelRolloutService&limit=1000')).body.invocations as { handler: string; status: string }[];
    return list.some((i) => i.handler === 'runWave') && list.every((i) => ['completed', 'failed', 'cancelled'].includes(i.status));
  }, 20_000, 'every rollout invocation finished');
  const c = await current();
  assert.equal(c.state, 'cancelled');
  const touched = new Set<string>(c.succeededIds);
  const untouched = plan.body.sentinels.filter((s: any) => s.wave >= c.currentWave).map((s: any) => s.id).filter((id: string) => !touched.has(id));
  assert.ok(untouched.length > 0, 'later waves never started');
  const mid = await images();
  for (const id of untouched) assert.equal(mid[id], before[id], `${id} untouched`);

  const rb = await stack.api('/v1/sentinel-rollouts/current/rollback', { method: 'POST' });
  assert.equal(rb.status, 200, JSON.stringify(rb.body));
  assert.equal(rb.body.reverted, touched.size);
  assert.equal(rb.body.state, 'cancelled');
  assert.deepEqual(await images(), before, 'every sentinel is back on its previous image');
});

test('a ctrl restart in the middle of a wave resumes the rollout; a dead Slack receiver does not stop it', async () => {
  const dead = await slackReceiver();
  await dead.close();
  // The new image's pods are held, so the first wave is in flight when ctrl goes away, and
  // stays so until ctrl is back.
  sim.holdImage('sentinel:v6');
  const start = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v6', wavePercentages: WAVES, slackWebhookUrl: dead.url } });
  assert.equal(start.status, 202);
  const [first] = await inWave(0);
  await until(async () => (await images())[first!] === 'sentinel:v6', { what: 'the first wave under way' });
  assert.equal((await current()).state, 'in_progress', 'still rolling when ctrl goes away');
  await stack.restartCtrl();
  sim.releaseImage('sentinel:v6');
  const done = await waitState(['completed', 'paused']);
  assert.equal(done.state, 'completed', JSON.stringify(done.notes));
  assertEvery(Object.values(await images()), (i) => i === 'sentinel:v6');
});

test('the current rollout pages its lists and its sentinels: every sentinel once, in id order, with per-wave counts', async () => {
  const start = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v7', wavePercentages: WAVES } });
  assert.equal(start.status, 202, JSON.stringify(start.body));
  const done = await waitState(['completed', 'paused'], 30_000);
  assert.equal(done.state, 'completed', JSON.stringify(done.notes));
  assert.deepEqual(done.waves.map((w: any) => [w.index, w.total, w.succeeded, w.pending]), [[0, 1, 1, 0], [1, 2, 2, 0], [2, 3, 3, 0], [3, 4, 4, 0]]);
  const all = [...fleet].sort();
  const succeeded: string[] = [];
  let cursor = '';
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 10, 'pages end');
    const p = (await stack.api(`/v1/sentinel-rollouts/current?list=succeeded&limit=3${cursor ? `&cursor=${cursor}` : ''}`)).body;
    succeeded.push(...p.ids);
    if (!p.nextCursor) break;
    cursor = p.nextCursor;
  }
  assert.deepEqual(succeeded, all);
  const first = (await stack.api('/v1/sentinel-rollouts/current/sentinels?limit=4')).body;
  assert.equal(first.sentinels.length, 4);
  const rest = (await stack.api(`/v1/sentinel-rollouts/current/sentinels?cursor=${first.nextCursor}`)).body;
  assert.deepEqual([...first.sentinels, ...rest.sentinels].map((s: any) => s.id), all);
  assertEvery(rest.sentinels, (s: any) => s.status === 'READY' && s.previousImage !== 'sentinel:v7');
  const bad = await stack.api('/v1/sentinel-rollouts/current?list=nope');
  assert.equal(bad.status, 400);
  assert.match(JSON.stringify(bad.body.error.details), /list/);
});
