import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { loadConfig } from '../../src/config';
import { startCtrl, type CtrlHandle } from '../../src/modes/ctrl';

// The production convergence timeout (10 m): a healthy sentinel converges however slow the
// machine is. The never-healthy case runs on a second ctrl replica with a short one (below).
const stack = await testStack({ regions: ['us-east-1'] });
/** The never-healthy deploy's timeout, so that case ends in seconds. Only a call that cannot
 *  converge runs under it, so how fast the machine is never decides a result. */
const SHORT_TIMEOUT = '2s';

/** A second ctrl on the same database whose SentinelService gives up after SHORT_TIMEOUT: a
 *  call made through it runs there (the engine's hot path) with that deadline journaled. */
async function impatientCtrl(): Promise<CtrlHandle> {
  const flags = {
    databaseUrl: stack.db.url,
    adminToken: stack.adminToken,
    listen: '127.0.0.1:0',
    agentTokens: `us-east-1=${stack.regions.get('us-east-1')!.token}`,
    logLevel: 'silent',
    sentinelTimeout: SHORT_TIMEOUT,
    noMigrate: true,
  };
  return startCtrl(loadConfig('ctrl', flags, {}), { recheckMs: 1000 });
}

async function readySentinel(): Promise<string> {
  const d = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  await until(async () => (await stack.api(`/v1/deployments/${d.body.id}`)).body.status === 'ready', 20_000, 'deploy ready');
  const list = await stack.api('/v1/sentinels?region=us-east-1');
  assert.equal(list.body.sentinels.length, 1);
  return list.body.sentinels[0].id;
}

const sentinelChanges = async (id: string) =>
  (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_changes WHERE resource_type = 'sentinel' AND resource_id = ${id}`)[0]!.n;

test('SentinelService: unchanged and healthy returns READY without writing', async () => {
  const id = await readySentinel();
  const before = await stack.db.sql<{ updatedAt: Date; deployStatus: string }[]>`SELECT updated_at, deploy_status FROM sentinels WHERE id = ${id}`;
  const changes = await sentinelChanges(id);
  const r = await stack.api(`/v1/sentinels/${id}/deploy`, { body: {} });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'READY');
  const after = await stack.db.sql<{ updatedAt: Date }[]>`SELECT updated_at FROM sentinels WHERE id = ${id}`;
  assert.equal(after[0]!.updatedAt.getTime(), before[0]!.updatedAt.getTime(), 'row untouched');
  assert.equal(await sentinelChanges(id), changes, 'no outbox row');
});

test('SentinelService: a new image converges to READY; one that never becomes healthy fails after the timeout', async () => {
  // Its own sentinel (the environment's one, made by a deploy), so it passes alone by name.
  const id = await readySentinel();
  const ok = await stack.api(`/v1/sentinels/${id}/deploy`, { body: { image: 'ghcr.io/unkeyed/sentinel:v2' } });
  assert.equal(ok.body.status, 'READY', JSON.stringify(ok.body));
  const [row] = await stack.db.sql<{ runningImage: string; deployStatus: string }[]>`SELECT running_image, deploy_status FROM sentinels WHERE id = ${id}`;
  assert.equal(row!.runningImage, 'ghcr.io/unkeyed/sentinel:v2');
  assert.equal(row!.deployStatus, 'ready');

  const impatient = await impatientCtrl();
  const started = Date.now();
  const bad = await fetch(`${impatient.url}/v1/sentinels/${id}/deploy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ image: 'ghcr.io/unkeyed/sentinel:crash' }),
  })
    .then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
    .finally(() => impatient.close());
  assert.equal(bad.status, 200, JSON.stringify(bad.body));
  assert.equal(bad.body.status, 'FAILED', JSON.stringify(bad.body));
  assert.match(bad.body.reason, /did not converge/);
  assert.ok(Date.now() - started >= 1900, 'it waited for the timeout');
  const [failed] = await stack.db.sql<{ deployStatus: string; image: string }[]>`SELECT deploy_status, image FROM sentinels WHERE id = ${id}`;
  assert.equal(failed!.deployStatus, 'failed');
  assert.equal(failed!.image, 'ghcr.io/unkeyed/sentinel:crash', 'no self-rollback: the failed config stays (seed 000)');

  const missing = await stack.api('/v1/sentinels/snt-nothere/deploy', { body: {} });
  assert.equal(missing.status, 404);
  const invalid = await stack.api(`/v1/sentinels/${id}/deploy`, { body: { replicas: -1 } });
  assert.equal(invalid.status, 400);
});
