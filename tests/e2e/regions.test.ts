// Regions as first-class: the registry, liveness from heartbeats and streams, lag, and the
// refusal of unknown regions. A short --agent-offline-after and fast heartbeats keep it quick.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import WebSocket from 'ws';
import { Watcher } from '../../src/sync/watcher';
import { runCli } from '../helpers/cli';
import { newId } from '../../src/ids';
import { applyFailures, sentinels, tenancy, withTx } from '../../src/store';

const stack = await testStack({
  ctrl: { settings: { agentOfflineAfter: '1500ms', offlineGrace: '2s' } },
  krane: {
    tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500, heartbeatMs: 200 },
    createWatcher: (o) => new Watcher({ ...o, backoffMinMs: 50, backoffMaxMs: 200 }),
  },
});

const regions = async () => {
  const r = await stack.api('/v1/regions');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return new Map<string, any>(r.body.map((x: any) => [x.name, x]));
};

test('GET /v1/regions lists every region with a token, online, with its agent and no lag once synced', async () => {
  const all = await until(async () => {
    const m = await regions();
    return [...m.values()].every((r) => r.status === 'online' && r.lastFullSyncAt && r.lag.changes === 0) ? m : undefined;
  }, 15_000, 'both regions online and synced');
  assert.deepEqual([...all.keys()], ['eu-west-1', 'us-east-1']);
  const us = all.get('us-east-1');
  assert.equal(us.agent.leader, true);
  assert.equal(us.agent.version, '0.1.0');
  assert.ok(us.agent.id);
  assert.equal(typeof us.objects, 'object');
  assert.deepEqual(Object.keys(us).sort(), ['agent', 'drift', 'failures', 'lag', 'lastFullSyncAt', 'lastSeenAt', 'name', 'objects', 'status']);
  assert.equal((await stack.api('/v1/regions', { token: null })).status, 401);
});

test('a deploy naming an unknown region is a 400 that lists the known regions, and writes nothing', async () => {
  const before = await stack.db.sql`SELECT count(*)::int AS n FROM deployments`;
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1', 'nowhere'], replicas: 1 } });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.error.code, 'ERR_REGION_UNKNOWN');
  assert.match(r.body.error.message, /nowhere/);
  assert.match(r.body.error.message, /eu-west-1, us-east-1/);
  assert.deepEqual(r.body.error.details.map((d: any) => d.field), ['regions.1']);
  const after = await stack.db.sql`SELECT count(*)::int AS n FROM deployments`;
  assert.equal(after[0]!.n, before[0]!.n);
});

test('a sentinel deploy in a region that is not known (no agent token) is a 400 that lists the known regions, and writes nothing', async () => {
  // A sentinel left in a region whose agent token is gone: deploying it again names the region.
  const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
  const id = await withTx(stack.db.sql, async (tx) => {
    await tenancy.insertEnvironment(tx, { ...scope, slug: 'retired-region' });
    return (await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: 'retired-1', image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 })).sentinel.id;
  });
  const row = async () => (await stack.db.sql`SELECT image, replicas, deploy_status, updated_at FROM sentinels WHERE id = ${id}`)[0];
  const changes = async () => (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_changes WHERE resource_id = ${id}`)[0]!.n;
  const before = { row: await row(), changes: await changes() };
  for (const path of [`/v1/sentinels/${id}/deploy`, `/v1/sentinels/${id}/deploy?wait=false`]) {
    const r = await stack.api(path, { body: { image: 'sentinel:v2', replicas: 2 } });
    assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, 'ERR_REGION_UNKNOWN');
    assert.match(r.body.error.message, /region "retired-1" is not known/);
    assert.match(r.body.error.message, /known regions: eu-west-1, us-east-1$/);
    assert.deepEqual(r.body.error.details, [{ field: 'sentinel.region', message: 'unknown region "retired-1"; known regions: eu-west-1, us-east-1' }]);
  }
  // Nothing written: no workflow invocation, the row as it was, no change for krane.
  const invocations = await stack.db.sql`SELECT service, handler FROM engine_invocations WHERE object_key = ${id}`;
  assert.deepEqual([...invocations], []);
  assert.deepEqual(await row(), before.row);
  assert.equal(await changes(), before.changes);
});

test('heartbeats take only the token\'s own region and name bad fields', async () => {
  const token = stack.regions.get('us-east-1')!.token;
  const post = (body: unknown, t: string | null = token) =>
    fetch(stack.ctrl.url + '/v1/cluster/heartbeat', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(t ? { authorization: `Bearer ${t}` } : {}) },
      body: JSON.stringify(body),
    });
  const beat = { region: 'eu-west-1', agentId: 'x', version: '0.1.0', leader: true };
  assert.equal((await post(beat)).status, 403);
  assert.equal((await post(beat, null)).status, 401);
  const bad = await post({ region: 'us-east-1', agentId: 'x', version: '0.1.0', leader: true, cursor: 'nonsense' });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as any).error.details[0].field, 'cursor');
});

test('a region goes offline after its krane stops, builds up lag, and comes back online with none', async () => {
  const events: any[] = [];
  const ws = new WebSocket(stack.ctrl.url.replace(/^http/, 'ws') + `/v1/events?type=region.status&token=${stack.adminToken}`);
  ws.on('message', (m) => events.push(JSON.parse(String(m))));
  await until(() => events.some((e) => e.type === 'hello'), 10_000, 'event socket open');

  await stack.stopKrane('eu-west-1');
  const offline = await until(async () => {
    const r = (await regions()).get('eu-west-1');
    return r.status === 'offline' ? r : undefined;
  }, 15_000, 'eu-west-1 offline');
  assert.ok(offline.lastSeenAt);
  assert.equal((await regions()).get('us-east-1').status, 'online');
  await until(() => events.some((e) => e.region === 'eu-west-1' && e.status === 'offline'), 10_000, 'region.status offline event');

  // Changes for the offline region pile up as lag.
  const d = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['eu-west-1'], replicas: 1 } });
  assert.equal(d.status, 202);
  const lagging = await until(async () => {
    const r = (await regions()).get('eu-west-1');
    return r.lag.changes > 0 ? r : undefined;
  }, 15_000, 'lag on eu-west-1');
  assert.ok(lagging.lag.seconds >= 0);

  await stack.restartKrane('eu-west-1');
  await until(async () => {
    const r = (await regions()).get('eu-west-1');
    return r.status === 'online' && r.lag.changes === 0;
  }, 15_000, 'eu-west-1 online and caught up');
  await until(() => events.some((e) => e.region === 'eu-west-1' && e.status === 'online'), 10_000, 'region.status online event');
  const mine = events.filter((e) => e.type === 'region.status' && e.region === 'eu-west-1').map((e) => e.status);
  assert.deepEqual(mine, ['offline', 'online'], 'each change announced once');
  ws.close();
});

test('ctrl /metrics carries per-region gauges', async () => {
  const text = await (await fetch(stack.ctrl.url + '/metrics')).text();
  for (const name of ['unkey_region_up', 'unkey_region_last_seen_timestamp_seconds', 'unkey_region_lag_changes', 'unkey_region_lag_seconds', 'unkey_region_streams']) {
    assert.match(text, new RegExp(`^${name}\\{[^}]*region="us-east-1"`, 'm'), name);
  }
});

test('`regions ls` shows every region with status, lag and leader; --json prints the API answer', async () => {
  const flags = ['--api', stack.ctrl.url, '--token', stack.adminToken];
  const text = await until(async () => {
    const r = await runCli(['regions', 'ls', ...flags]);
    return r.code === 0 && /us-east-1\s+online/.test(r.stdout) && /eu-west-1\s+online/.test(r.stdout) ? r.stdout : undefined;
  }, 15_000, 'regions ls shows both online');
  assert.match(text, /^REGION\s+STATUS\s+LAST SEEN\s+LAG\s+LEADER/);
  const json = await runCli(['regions', 'ls', '--json', ...flags]);
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout).map((r: any) => r.name), ['eu-west-1', 'us-east-1']);
});

test('a deploy to an offline region fails after the offline grace, naming the region and when it was last seen', async () => {
  await stack.stopKrane('eu-west-1');
  await until(async () => (await regions()).get('eu-west-1').status === 'offline', 15_000, 'eu-west-1 offline');
  const d = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['eu-west-1'], replicas: 1 } });
  assert.equal(d.status, 202);
  // The deploy timeout is 5 minutes: failing within this deadline is the grace at work.
  const failed = await until(async () => {
    const r = await stack.api(`/v1/deployments/${d.body.id}`);
    return r.body.status === 'failed' ? r.body : undefined;
  }, 30_000, 'deploy failed');
  assert.match(failed.error, /region eu-west-1 is offline \(last seen \d{4}-\d\d-\d\dT/);
  assert.match(failed.error, /offline grace/);
  await stack.restartKrane('eu-west-1');
  await until(async () => (await regions()).get('eu-west-1').status === 'online', 15_000, 'eu-west-1 back online');
});

test('deploy --wait shows a region as offline, with when it was last seen, while it waits; the API says so per region', async () => {
  await stack.stopKrane('eu-west-1');
  try {
    await until(async () => (await regions()).get('eu-west-1').status === 'offline', 15_000, 'eu-west-1 offline');
    const r = await runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1,eu-west-1', '--replicas', '1', '--wait', '--api', stack.ctrl.url, '--token', stack.adminToken], { watch: { pollMs: 200 } });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /eu-west-1\s+offline \(last seen \d\d:\d\d:\d\d\)/, r.stdout);
    assert.doesNotMatch(r.stdout, /us-east-1\s+offline/, r.stdout);
    const id = /deployment (dep-[a-z0-9]+)/.exec(r.stdout)![1];
    const topology = (await stack.api(`/v1/deployments/${id}`)).body.topology as any[];
    const eu = topology.find((t) => t.region === 'eu-west-1');
    assert.equal(eu.regionStatus, 'offline');
    assert.ok(eu.regionLastSeenAt);
    assert.equal(topology.find((t) => t.region === 'us-east-1').regionStatus, 'online');
  } finally {
    await stack.restartKrane('eu-west-1');
  }
  await until(async () => (await regions()).get('eu-west-1').status === 'online', 15_000, 'eu-west-1 back online');
});

test('a desired state the cluster refused shows in GET /v1/regions and `regions ls`, with its reason, until it applies', async () => {
  const reason = 'the cluster does not serve cilium.io/v2 CiliumNetworkPolicy (CRD not installed?)';
  await applyFailures.recordApplyOutcomes(stack.db.sql, 'eu-west-1', [{ resourceType: 'cilium_network_policy', resourceId: 'cnp-x', outcome: 'failed', code: 'ERR_KUBE_KIND_UNAVAILABLE', reason }]);
  const eu = (await regions()).get('eu-west-1');
  assert.deepEqual(eu.failures.map((f: any) => [f.resourceType, f.resourceId, f.code, f.reason]), [['cilium_network_policy', 'cnp-x', 'ERR_KUBE_KIND_UNAVAILABLE', reason]]);
  assert.equal((await regions()).get('us-east-1').failures.length, 0);
  const r = await runCli(['regions', 'ls', '--api', stack.ctrl.url, '--token', stack.adminToken]);
  assert.match(r.stdout, /FAILURES/);
  assert.ok(r.stdout.includes(`eu-west-1: cilium_network_policy/cnp-x ERR_KUBE_KIND_UNAVAILABLE: ${reason}`), r.stdout);
  await applyFailures.recordApplyOutcomes(stack.db.sql, 'eu-west-1', [{ resourceType: 'cilium_network_policy', resourceId: 'cnp-x', outcome: 'succeeded' }]);
  assert.equal((await regions()).get('eu-west-1').failures.length, 0);
});
