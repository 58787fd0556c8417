// No promotion while a target region is offline (issue 33, defect 3), by an operator: a promote
// of a ready deployment that runs in an offline region is refused (409, the region named) and
// succeeds once the region is back; a promote of a canary under way is stored and held by the
// walk until the region is back, then taken. The offline grace is long, so nothing here waits
// for it: the region stays offline exactly as long as the test keeps its krane down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentsOf } from '../helpers/stack';
import { Watcher } from '../../src/sync/watcher';

const stack = await testStack({
  ctrl: { settings: { agentOfflineAfter: '1500ms', offlineGrace: '120s' } },
  krane: {
    tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500, heartbeatMs: 200 },
    createWatcher: (o) => new Watcher({ ...o, backoffMinMs: 50, backoffMaxMs: 200 }),
  },
});
const BOTH = ['us-east-1', 'eu-west-1'];
const { create, status } = deploymentsOf(stack, BOTH);
const table = async () => ((await stack.api('/v1/environments/default/traffic')).body?.backends ?? []) as { deploymentId: string; weight: number }[];
const regionStatus = async (name: string) => ((await stack.api('/v1/regions')).body as any[]).find((r) => r.name === name).status;

async function offline(region: string): Promise<void> {
  await stack.stopKrane(region);
  await until(async () => (await regionStatus(region)) === 'offline', 15_000, `${region} offline`);
}

async function online(region: string): Promise<void> {
  await stack.restartKrane(region);
  await until(async () => (await regionStatus(region)) === 'online', 15_000, `${region} online`);
}

test('a promote of a ready deployment into an offline region is refused, naming it, and taken once the region is back', async () => {
  const older = await create();
  await status(older, ['ready']);
  const newer = await create();
  await status(newer, ['ready']);
  await until(async () => JSON.stringify(await table()) === JSON.stringify([{ deploymentId: newer, weight: 100 }]), 15_000, 'the newer serving');
  await offline('eu-west-1');
  try {
    const refused = await stack.api(`/v1/deployments/${older}/promote`, { method: 'POST' });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'ERR_PROMOTE_REGION_OFFLINE');
    assert.match(refused.body.error.message, /eu-west-1/);
    assert.deepEqual(await table(), [{ deploymentId: newer, weight: 100 }], 'nothing moved');
  } finally {
    await online('eu-west-1');
  }
  const taken = await stack.api(`/v1/deployments/${older}/promote`, { method: 'POST' });
  assert.equal(taken.status, 200, JSON.stringify(taken.body));
  assert.deepEqual(await table(), [{ deploymentId: older, weight: 100 }]);
});

/** The walk's journaled checks (deploy invocation of `id`): what each saw. */
async function checks(id: string): Promise<{ name: string; command: string | null; offline: string[] }[]> {
  const rows = await stack.db.sql<{ name: string; value: { v?: { command: string | null; offline?: { regions: string[] } } } | null }[]>`
    SELECT j.name, j.value FROM engine_journal j JOIN engine_invocations i ON i.id = j.invocation_id
    WHERE i.service = 'DeployService' AND i.handler = 'deploy' AND i.object_key = ${id} AND j.name LIKE 'check-%' AND j.status = 'done'
    ORDER BY j.invocation_id, j.seq`;
  return rows.map((r) => ({ name: r.name, command: r.value?.v?.command ?? null, offline: r.value?.v?.offline?.regions ?? [] }));
}

test('a promote of a canary while one of its regions is offline is held by the walk, and taken once the region is back', async () => {
  const stable = await create();
  await status(stable, ['ready']);
  const canary = await create({ type: 'canary', steps: [{ weight: 20, pause: '600s' }] });
  await until(async () => (await table()).some((b) => b.deploymentId === canary && b.weight === 20), 30_000, 'canary at 20%');
  await offline('eu-west-1');
  try {
    const promoting = await stack.api(`/v1/deployments/${canary}/promote`, { method: 'POST' });
    assert.equal(promoting.status, 200, JSON.stringify(promoting.body));
    assert.equal(promoting.body.promoting, true);
    // Two checks that saw the promote with the region offline (the wake-up's and the next
    // one's): each left the canary where it was.
    await until(async () => (await checks(canary)).filter((c) => c.command === 'promote' && c.offline.includes('eu-west-1')).length >= 2, 15_000, 'checks that saw the promote while offline');
    assert.deepEqual(await table(), [{ deploymentId: stable, weight: 80 }, { deploymentId: canary, weight: 20 }], 'held at 20%');
    assert.equal((await stack.api(`/v1/deployments/${stable}`)).body.desiredState, 'running');
  } finally {
    await online('eu-west-1');
  }
  const done = await status(canary, ['ready', 'rolled_back', 'failed'], 30_000);
  assert.equal(done.status, 'ready', done.error);
  assert.deepEqual(await table(), [{ deploymentId: canary, weight: 100 }]);
});
