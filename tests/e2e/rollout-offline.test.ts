// Fleet rollouts with a region offline: its sentinels are skipped (not waited for), the rollout
// completes its waves and lists them; a later rollout to the same image picks them up.
// RollbackAll also reverts sentinels that failed after their new image was written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testStack, until } from '../helpers/stack';
import { newId } from '../../src/ids';
import { cilium, sentinels, tenancy, withTx } from '../../src/store';
import { sentinelObjectName } from '../../src/kube/manifests/names';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';
import { Watcher } from '../../src/sync/watcher';
import { runCli } from '../helpers/cli';

const stack = await testStack({
  // outboundAllow: the Slack stand-in is plain http on 127.0.0.1 (refused by the SSRF policy otherwise).
  // The production sentinel timeout (10 m): every healthy sentinel converges however slow the
  // machine is, and the rollback test's victim fails at once (a refused write), not by timing out.
  ctrl: { settings: { agentOfflineAfter: '1500ms', offlineGrace: '2s', outboundAllow: '127.0.0.1' } },
  krane: {
    // The rollback test's victim was refused, so the cluster still runs its previous image and
    // reverting to it changes nothing there: krane reports it only at its next relist (5 m in
    // production, inside the 10 m timeout). A short resync brings that report in seconds.
    resyncInterval: '2s',
    tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500, heartbeatMs: 200 },
    createWatcher: (o) => new Watcher({ ...o, backoffMinMs: 50, backoffMaxMs: 200 }),
  },
});
const byRegion: Record<string, string[]> = { 'us-east-1': [], 'eu-west-1': [] };
await withTx(stack.db.sql, async (tx) => {
  for (const [region, n] of [['us-east-1', 4], ['eu-west-1', 2]] as const) {
    for (let i = 0; i < n; i++) {
      const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
      await tenancy.insertEnvironment(tx, { ...scope, slug: `${region}-${i}` });
      const { sentinel } = await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region, image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
      await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region });
      byRegion[region]!.push(sentinel.id);
    }
  }
});
const healthyOn = (image: string, n: number) =>
  until(async () => {
    const rows = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE health = 'healthy' AND running_image = ${image}`;
    return rows[0]!.n >= n;
  }, 20_000, `${n} sentinels healthy on ${image}`);
await healthyOn('sentinel:v1', 6);

const current = async () => (await stack.api('/v1/sentinel-rollouts/current')).body;
const waitState = (states: string[], ms = 30_000) => until(async () => { const c = await current(); return states.includes(c.state) ? c : undefined; }, ms, `rollout ${states.join('/')}`);
const regionStatus = async (name: string) => ((await stack.api('/v1/regions')).body as any[]).find((r) => r.name === name).status;
const sorted = (a: string[]) => [...a].sort();

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

test('a rollout with one region offline completes its waves and lists the skipped sentinels; a later one picks them up', async () => {
  await stack.stopKrane('eu-west-1');
  await until(async () => (await regionStatus('eu-west-1')) === 'offline', 15_000, 'eu-west-1 offline');
  const slack = await slackReceiver();
  try {
    const r = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', wavePercentages: [50, 100], slackWebhookUrl: slack.url } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const done = await waitState(['completed', 'paused']);
    assert.equal(done.state, 'completed', JSON.stringify(done));
    assert.deepEqual(sorted(done.skippedIds), sorted(byRegion['eu-west-1']!));
    assert.deepEqual(sorted(done.succeededIds), sorted(byRegion['us-east-1']!));
    assert.deepEqual(done.failedIds, []);
    const skipped = (await stack.api('/v1/sentinel-rollouts/current/sentinels?status=SKIPPED')).body.sentinels;
    assert.equal(skipped.length, 2);
    for (const s of skipped) assert.match(s.reason, /region eu-west-1 is offline/);
    for (const id of done.skippedIds) assert.match(done.notes[id].reason, /region eu-west-1 is offline/);
    // `rollout status` shows them too: counted in the summary, and named with the reason in
    // the line of the wave they were in.
    const status = await runCli(['rollout', 'status'], { env: { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken } });
    assert.equal(status.code, 0, status.stderr + status.stdout);
    assert.match(status.stdout, /^rollout to sentinel:v2: completed .*succeeded 4 {2}failed 0 .*skipped \(offline regions\) 2/, status.stdout);
    for (const id of byRegion['eu-west-1']!) assert.match(status.stdout, new RegExp(`^ {2}wave \\d .* skipped: .*${id} \\(region eu-west-1 is offline`, 'm'), status.stdout);
    const perWave = [...status.stdout.matchAll(/ (\d+) skipped: /g)].reduce((n, m) => n + Number(m[1]), 0);
    assert.equal(perWave, 2, status.stdout);
    await until(() => slack.posts.some((p) => /completed: 4 updated, 0 failed, 2 skipped/.test(p)), 10_000, 'final slack post');
    assert.ok(slack.posts.some((p) => /skipped in offline regions/.test(p)), slack.posts.join('\n'));
  } finally {
    await slack.close();
  }

  await stack.restartKrane('eu-west-1');
  await until(async () => (await regionStatus('eu-west-1')) === 'online', 15_000, 'eu-west-1 online');
  const again = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', wavePercentages: [100] } });
  assert.equal(again.status, 202, JSON.stringify(again.body));
  const second = await waitState(['completed', 'paused']);
  assert.equal(second.state, 'completed');
  assert.deepEqual(sorted(second.succeededIds), sorted(byRegion['eu-west-1']!));
  assert.deepEqual(second.skippedIds, []);
});

test('rollback reverts the sentinels that failed after their new image was written', async () => {
  const sim = stack.regions.get('us-east-1')!.sim.sim;
  const victim = byRegion['us-east-1']![0]!;
  // The cluster refuses the victim's new desired state: its new image is written (the row) but
  // it fails at once, whatever the timeout, as a never-healthy one fails after it.
  sim.denyWrites(SENTINEL_NAMESPACE, sentinelObjectName(victim), 'sentinel:v3 is not allowed here');
  try {
    const r = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v3', wavePercentages: [100] } });
    assert.equal(r.status, 202);
    const paused = await waitState(['paused', 'completed']);
    assert.equal(paused.state, 'paused');
    assert.deepEqual(paused.failedIds, [victim]);
  } finally {
    sim.allowWrites(SENTINEL_NAMESPACE, sentinelObjectName(victim));
  }
  const rb = await stack.api('/v1/sentinel-rollouts/current/rollback', { method: 'POST' });
  assert.ok(rb.status < 300, JSON.stringify(rb.body));
  const done = await waitState(['cancelled']);
  assert.equal(done.reverted, 6);
  const [row] = await stack.db.sql<{ image: string }[]>`SELECT image FROM sentinels WHERE id = ${victim}`;
  assert.equal(row!.image, 'sentinel:v2', 'the failed sentinel is back on its previous image');
});
