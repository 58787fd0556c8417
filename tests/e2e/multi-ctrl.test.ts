// Two ctrl replicas on one database (issue 10): the stack's ctrl and a second one started
// beside it, each with its own engine, API and feed. Requests alternate between them; krane
// reports to the first only, so a workflow started through one replica is often woken, and
// (stealAfterMs 0: a due timer is anyone's at once) finished, by the other. Every call that
// waits on the engine must be answered: deploys, sentinel deploys, rollout start, cancel and
// rollback. Each request carries a deadline, so a hang fails the test instead of stalling it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { loadConfig } from '../../src/config';
import { startCtrl, type CtrlHandle } from '../../src/modes/ctrl';
import { newId } from '../../src/ids';
import { cilium, sentinels, tenancy, withTx } from '../../src/store';

const REGION = 'us-east-1';
/** A hung call fails the test well before the runner's own timeout. */
const CALL_DEADLINE_MS = 30_000;
/** Anyone may take a due timer at once: cross-replica finishing is the common case, not luck. */
const engine = { stealAfterMs: 0 };

const stack = await testStack({ regions: [REGION], ctrl: { engine, settings: { sentinelTimeout: '20s' } } });
const second: CtrlHandle = await startCtrl(
  loadConfig(
    'ctrl',
    {
      databaseUrl: stack.db.url,
      adminToken: stack.adminToken,
      listen: '127.0.0.1:0',
      agentTokens: `${REGION}=${stack.regions.get(REGION)!.token}`,
      logLevel: 'silent',
      sentinelTimeout: '20s',
      noMigrate: true,
    },
    {},
  ),
  { recheckMs: 1000, engine },
);
after(() => second.close());

const replicas = [stack.ctrl, second];
let turn = 0;
/** The replica the next request goes to: they alternate. */
const next = () => replicas[turn++ % 2]!;

async function api(ctrl: CtrlHandle, path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(ctrl.url + path, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers: { authorization: `Bearer ${stack.adminToken}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    signal: AbortSignal.timeout(CALL_DEADLINE_MS),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

/** Invocations each replica's engine finished, from its own /metrics. */
async function finishedOn(ctrl: CtrlHandle): Promise<number> {
  const text = await (await fetch(`${ctrl.url}/metrics`)).text();
  return [...text.matchAll(/^engine_invocations_finished_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

// A fleet of sentinels (one per environment) for the sentinel deploys and the rollout.
const fleet: string[] = [];
await withTx(stack.db.sql, async (tx) => {
  for (let i = 0; i < 4; i++) {
    const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
    await tenancy.insertEnvironment(tx, { ...scope, slug: `multi${i}` });
    const { sentinel } = await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: REGION, image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
    await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region: REGION });
    fleet.push(sentinel.id);
  }
});

test('deploys and their stop/start through alternating replicas all finish, read back through either', async () => {
  const created = await Promise.all(
    Array.from({ length: 6 }, () => api(next(), '/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], replicas: 1 } })),
  );
  for (const c of created) assert.equal(c.status, 202, JSON.stringify(c.body));
  const ids = created.map((c) => c.body.id as string);
  for (const id of ids) {
    const d = await until(async () => {
      const v = await api(next(), `/v1/deployments/${id}`);
      return v.body.status === 'ready' || v.body.status === 'failed' ? v.body : undefined;
    }, 30_000, `deployment ${id} finished`);
    assert.equal(d.status, 'ready', d.error ?? '');
  }
  const stopped = await Promise.all(ids.slice(0, 2).map((id) => api(next(), `/v1/deployments/${id}/stop`, { method: 'POST' })));
  for (const s of stopped) assert.ok(s.status < 300, JSON.stringify(s.body));
  for (const id of ids.slice(0, 2)) await until(async () => (await api(next(), `/v1/deployments/${id}`)).body.status === 'stopped', 30_000, `${id} stopped`);
  const started = await Promise.all(ids.slice(0, 2).map((id) => api(next(), `/v1/deployments/${id}/start`, { method: 'POST' })));
  for (const s of started) assert.ok(s.status < 300, JSON.stringify(s.body));
  for (const id of ids.slice(0, 2)) await until(async () => (await api(next(), `/v1/deployments/${id}`)).body.status === 'ready', 30_000, `${id} ready again`);
});

test('sentinel deploys through alternating replicas, several at once, each answer READY', async () => {
  await until(async () => {
    const [r] = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE id = ANY(${fleet}::text[]) AND health = 'healthy'`;
    return r!.n === fleet.length;
  }, 30_000, 'fleet healthy');
  for (const round of [2, 3]) {
    const answers = await Promise.all(fleet.map((id) => api(next(), `/v1/sentinels/${id}/deploy`, { body: { image: `sentinel:v${round}` } })));
    for (const a of answers) {
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.equal(a.body.status, 'READY', JSON.stringify(a.body));
    }
  }
});

test('a rollout started on one replica completes; another is cancelled and rolled back through the other', async () => {
  const current = async () => (await api(next(), '/v1/sentinel-rollouts/current')).body;
  const state = (states: string[]) => until(async () => { const c = await current(); return states.includes(c.state) ? c : undefined; }, 30_000, `rollout ${states.join('/')}`);

  // A webhook that never answers (.invalid does not resolve): posts fail, the rollout does not.
  const first = await api(next(), '/v1/sentinel-rollouts', { body: { image: 'sentinel:v4', wavePercentages: [25, 50, 100], slackWebhookUrl: WEBHOOK } });
  assert.equal(first.status, 202, JSON.stringify(first.body));
  assert.equal((await state(['completed', 'paused'])).state, 'completed');
  await assertNoViewShows(WEBHOOK_SECRET);

  const before = Object.fromEntries((await stack.db.sql<{ id: string; image: string }[]>`SELECT id, image FROM sentinels WHERE id = ANY(${fleet}::text[])`).map((r) => [r.id, r.image]));
  const secondRollout = await api(next(), '/v1/sentinel-rollouts', { body: { image: 'sentinel:v5', wavePercentages: [25, 50, 75, 100] } });
  assert.equal(secondRollout.status, 202, JSON.stringify(secondRollout.body));
  await until(async () => (await current()).currentWave >= 1, 30_000, 'wave 2 reached');
  const cancel = await api(next(), '/v1/sentinel-rollouts/current/cancel', { method: 'POST' });
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
  assert.equal(cancel.body.state, 'cancelled');
  const rollback = await api(next(), '/v1/sentinel-rollouts/current/rollback', { method: 'POST' });
  assert.equal(rollback.status, 200, JSON.stringify(rollback.body));
  const after = Object.fromEntries((await stack.db.sql<{ id: string; image: string }[]>`SELECT id, image FROM sentinels WHERE id = ANY(${fleet}::text[])`).map((r) => [r.id, r.image]));
  assert.deepEqual(after, before, 'every sentinel is back on its previous image');
});

const WEBHOOK_SECRET = 'multi-ctrl-webhook-secret';
const WEBHOOK = `https://hooks.slack.invalid/services/T0/B0/${WEBHOOK_SECRET}`;

/** Greps every invocation view of both replicas (the list and each one with its journal). */
async function assertNoViewShows(secret: string): Promise<void> {
  for (const ctrl of replicas) {
    const list = await api(ctrl, '/v1/invocations?limit=1000');
    assert.equal(list.status, 200);
    assert.ok(list.body.invocations.some((i: any) => i.service === 'SlackNotifier'), 'the webhook was posted to');
    assert.ok(!JSON.stringify(list.body).includes(secret), 'the invocation list shows the webhook');
    for (const inv of list.body.invocations) {
      const one = await api(ctrl, `/v1/invocations/${inv.id}`);
      assert.ok(!JSON.stringify(one.body).includes(secret), `invocation ${inv.service}/${inv.handler} shows the webhook`);
    }
  }
}

test('both replicas finished workflow invocations (the work really was shared)', async () => {
  // Work of its own (it passes alone by name): rounds of sentinel deploys through alternating
  // replicas, until each replica has finished some; the earlier tests' work counts too.
  for (let round = 10; round < 20; round++) {
    if ((await finishedOn(stack.ctrl)) > 0 && (await finishedOn(second)) > 0) break;
    const answers = await Promise.all(fleet.map((id) => api(next(), `/v1/sentinels/${id}/deploy`, { body: { image: `sentinel:v${round}` } })));
    for (const a of answers) assert.equal(a.body.status, 'READY', JSON.stringify(a.body));
  }
  assert.ok((await finishedOn(stack.ctrl)) > 0, 'the first replica finished none');
  assert.ok((await finishedOn(second)) > 0, 'the second replica finished none');
});
