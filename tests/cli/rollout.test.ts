// The rollout commands through commander against the in-process system with a small fleet.
import { test, after } from 'node:test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { renderRollout } from '../../src/cli/commands/rollout';
import { testStack, until } from '../helpers/stack';
import { runCli, runProgram } from '../helpers/cli';
import { newId } from '../../src/ids';
import { cilium, sentinels, tenancy, withTx } from '../../src/store';
import { sentinelObjectName } from '../../src/kube/manifests/names';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';

/** A stack with a fleet of four healthy sentinels (one per environment) on sentinel:v1. */
async function fleetStack(readyDelayMs = 20) {
  // The Slack stand-in listens on 127.0.0.1 over plain http: allowed explicitly (SSRF policy).
  const stack = await testStack({ regions: ['us-east-1'], readyDelayMs, ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
  const ids: string[] = [];
  await withTx(stack.db.sql, async (tx) => {
    for (let i = 0; i < 4; i++) {
      const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
      await tenancy.insertEnvironment(tx, { ...scope, slug: `cli${i}` });
      const { sentinel } = await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: 'us-east-1', image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
      await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region: 'us-east-1' });
      ids.push(sentinel.id);
    }
  });
  await until(async () => (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE health = 'healthy'`)[0]!.n === 4, 20_000, 'fleet healthy');
  return { stack, ids };
}

// Each test has its own fleet, so each passes alone and in any order.
const { stack } = await fleetStack();

async function cli(argv: string[], on = stack) {
  const r = await runCli(argv, { env: { UNKEY_INFRA_API: on.ctrl.url, UNKEY_INFRA_TOKEN: on.adminToken } });
  return { code: r.code, out: r.stdout, err: r.stderr };
}

/** A stand-in for Slack's incoming webhook: keeps the text of every post. */
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
  after(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, posts };
}

test('rollout start, status --watch to completion, and the per-wave view', async () => {
  const idle = await cli(['rollout', 'status']);
  assert.equal(idle.code, 0);
  assert.match(idle.out, /no rollout has run yet/);

  const bad = await cli(['rollout', 'start', '--image', 'sentinel:v2', '--waves', '25,50']);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /last wave must be 100/);
  assert.match(bad.err, /--waves/);
  // A value commander's parser refuses: the real program's usage exit.
  const notNumbers = await runProgram(['rollout', 'start', '--image', 'sentinel:v2', '--waves', 'a,b'], { env: { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken } });
  assert.equal(notNumbers.code, 2, notNumbers.stderr);
  assert.match(notNumbers.stderr, /--waves/);

  const start = await cli(['rollout', 'start', '--image', 'sentinel:v2', '--waves', '25,50,100']);
  assert.equal(start.code, 0, start.err);
  assert.match(start.out, /4 sentinels in 3 waves \(1, 1, 2\)/);

  const watch = await cli(['rollout', 'status', '--watch']);
  assert.equal(watch.code, 0, watch.err);
  assert.match(watch.out, /rollout to sentinel:v2: completed/);
  assert.match(watch.out, /wave 3\s+\[#{20}\] 2\/2 ready/);

  const json = await cli(['rollout', 'status', '--json']);
  assert.equal(JSON.parse(json.out).state, 'completed');
  const resume = await cli(['rollout', 'resume']);
  assert.equal(resume.code, 1, 'resume of a completed rollout is refused');
  assert.match(resume.err, /paused/);
});

test('rollout start --slack-webhook, then rollout cancel and rollout rollback through the CLI', async () => {
  // The sentinels' pods are held, so the first wave is still running when the cancel comes.
  const { stack: slow, ids } = await fleetStack(200);
  const sim = slow.regions.get('us-east-1')!.sim.sim;
  for (const id of ids) sim.holdWorkload(SENTINEL_NAMESPACE, sentinelObjectName(id));
  const slack = await slackReceiver();
  const start = await cli(['rollout', 'start', '--image', 'sentinel:v2', '--waves', '25,50,100', '--slack-webhook', slack.url], slow);
  assert.equal(start.code, 0, start.err);
  // Cancel queues behind the running wave (one key, one at a time) and lands before the next:
  // once it is queued, the held pods go.
  const cancelling = cli(['rollout', 'cancel'], slow);
  await until(async () => (await slow.db.sql`SELECT 1 FROM engine_invocations WHERE service = 'SentinelRolloutService' AND handler = 'cancel'`).length > 0, { what: 'the cancel queued' });
  for (const id of ids) sim.releaseWorkload(SENTINEL_NAMESPACE, sentinelObjectName(id));
  const cancel = await cancelling;
  assert.equal(cancel.code, 0, cancel.err);
  assert.equal(cancel.out, 'rollout cancel: cancelled\n');
  const status = JSON.parse((await cli(['rollout', 'status', '--json'], slow)).out);
  assert.equal(status.state, 'cancelled');
  assert.equal(status.succeededIds.length, 1, 'the first wave (one sentinel) finished, no later one started');

  const rollback = await cli(['rollout', 'rollback'], slow);
  assert.equal(rollback.code, 0, rollback.err);
  assert.equal(rollback.out, 'rollout rollback: cancelled, 1 sentinels reverted\n');
  const images = await slow.db.sql<{ image: string }[]>`SELECT image FROM sentinels`;
  assert.deepEqual([...new Set(images.map((r) => r.image))], ['sentinel:v1'], 'every sentinel back on its previous image');
  // The webhook heard the whole story, in order.
  await until(() => slack.posts.some((p) => /rollback completed/.test(p)), 10_000, 'the rollback post');
  const order = ['started', 'cancelled', 'rollback started', 'rollback completed'].map((w) => slack.posts.findIndex((p) => p.includes(w)));
  assertEvery(order, (n, k) => n >= 0 && (k === 0 || n > order[k - 1]!), slack.posts.join('\n'));
});

test('renderRollout shows failures with their reasons', () => {
  const text = renderRollout({
    state: 'paused',
    image: 'x:2',
    currentWave: 1,
    succeeded: 2,
    failed: 1,
    succeededIds: ['a', 'c'],
    failedIds: ['b'],
    notes: { b: { wave: 1, reason: 'did not converge' } },
    waves: [
      { index: 0, total: 1, succeeded: 1, failed: 0, skipped: 0, pending: 0 },
      { index: 1, total: 2, succeeded: 1, failed: 1, skipped: 0, pending: 0 },
      { index: 2, total: 1, succeeded: 0, failed: 0, skipped: 0, pending: 1 },
    ],
  });
  assert.match(text, /rollout to x:2: paused {2}wave 2\/3 {2}succeeded 2 {2}failed 1/);
  assert.match(text, /wave 2 .* 1\/2 ready {2}1 failed: b \(did not converge\)/);
  assert.match(text, /wave 3 .* 0\/1 ready/);
});
