// A target region whose agent goes offline during a canary (issue 23): its last instance rows
// still say running, but no step is promoted while it is offline, and after ctrl's
// --offline-grace the canary is rolled back with the region named, as a rolling deploy fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentsOf } from '../helpers/stack';
import { Watcher } from '../../src/sync/watcher';

const stack = await testStack({
  // maxParked 0: a suspended walk is replayed from its journal at every wake-up (its re-check,
  // once a second), so a step deadline the test rewrites in the journal is the one it holds to.
  ctrl: { engine: { maxParked: 0 }, settings: { agentOfflineAfter: '1500ms', offlineGrace: '3s' } },
  krane: {
    tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500, heartbeatMs: 200 },
    createWatcher: (o) => new Watcher({ ...o, backoffMinMs: 50, backoffMaxMs: 200 }),
  },
});
const BOTH = ['us-east-1', 'eu-west-1'];
const { create, status } = deploymentsOf(stack, BOTH);
const table = async () => ((await stack.api('/v1/environments/default/traffic')).body?.backends ?? []) as { deploymentId: string; weight: number }[];
const regionStatus = async (name: string) => ((await stack.api('/v1/regions')).body as any[]).find((r) => r.name === name).status;

test('a region going offline holds the canary\'s walk and rolls it back after the offline grace, naming the region', async () => {
  const stable = await create();
  await status(stable, ['ready']);
  // The first step lasts until the test ends it: the region is seen offline while the canary
  // is at 20%, however slow the machine (1 s steps could all pass before the offline was seen).
  const canary = await create({ type: 'canary', steps: [{ weight: 20, pause: '10m' }, ...[40, 60, 80].map((weight) => ({ weight, pause: '1s' }))] });
  // The 10 m first step holds the canary at 20% until the test ends it, so the weight is read
  // here, before the region goes: read after the offline, it would race the 3 s grace's rollback.
  await until(async () => (await table()).some((b) => b.deploymentId === canary && b.weight === 20), 30_000, 'canary at 20%');
  const heldAt = 20;
  await stack.stopKrane('eu-west-1');
  await until(async () => (await regionStatus('eu-west-1')) === 'offline', 15_000, 'eu-west-1 offline');
  // The step's end, made due now that the region is offline: its journaled deadline moved to a
  // second from now (the walk replays it at its next re-check). Past its deadline the step must
  // still not promote while eu-west-1 is offline, and the grace then rolls it back. The row
  // lock keeps a check from journaling in the middle of the change (the engine's journal writes
  // take FOR KEY SHARE on it), and the second ahead keeps a check that read the old deadline
  // just before from having journaled a time past the new one: its replay must decide the same.
  const ended = await stack.db.sql.begin(async (tx) => {
    await tx`SELECT 1 FROM engine_invocations WHERE object_key = ${canary} AND handler = 'deploy' FOR UPDATE`;
    return tx`
      UPDATE engine_journal j SET value = jsonb_build_object('v', (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 1000)
      FROM engine_invocations i
      WHERE i.id = j.invocation_id AND i.object_key = ${canary} AND i.handler = 'deploy' AND j.name = 'hold-0'`;
  });
  assert.equal(ended.count, 1, 'the first step\'s deadline was journaled');
  let max = heldAt;
  const done = await until(async () => {
    max = Math.max(max, ...(await table()).filter((b) => b.deploymentId === canary).map((b) => b.weight));
    const d = (await stack.api(`/v1/deployments/${canary}`)).body;
    return ['ready', 'rolled_back', 'failed'].includes(d.status) ? d : undefined;
  }, 20_000, 'canary ended');
  assert.equal(done.status, 'rolled_back', `ended ${done.status}: ${done.error}`);
  assert.match(done.error, /region eu-west-1 is offline/);
  assert.equal(max, heldAt, `promoted from ${heldAt}% to ${max}% while eu-west-1 was offline`);
  assert.deepEqual(await table(), [{ deploymentId: stable, weight: 100 }]);
  assert.equal((await stack.api(`/v1/deployments/${stable}`)).body.status, 'ready');
});
