// Blue-green's scale-down (issue 33, defects 5 and 6): the old (blue) deployment is stopped
// `scaleDownDelay` after the switch by a delayed call of its own, which holds no deployment's
// key while it waits and which is skipped when a later command moved blue (the last accepted
// command decides). The delay is an hour here, and the test ends it when its order of events
// is in place (fireScaleDown: the engine's timer made due now), so nothing depends on how fast
// the machine is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentsOf } from '../helpers/stack';

const stack = await testStack();
const BOTH = ['us-east-1', 'eu-west-1'];
const { create, status } = deploymentsOf(stack, BOTH);
const table = async () => ((await stack.api('/v1/environments/default/traffic')).body?.backends ?? []) as { deploymentId: string; weight: number }[];
const only = async (id: string) => JSON.stringify(await table()) === JSON.stringify([{ deploymentId: id, weight: 100 }]);
const BLUE_GREEN = { type: 'blue-green', scaleDownDelay: '1h' };

/** Blue serving, then green switched to: both ids, green ready with all traffic. */
async function switched(): Promise<{ blue: string; green: string }> {
  const blue = await create();
  await status(blue, ['ready']);
  await until(() => only(blue), 15_000, 'blue serving');
  const green = await create(BLUE_GREEN);
  const g = await status(green, ['ready', 'rolled_back', 'failed']);
  assert.equal(g.status, 'ready', g.error);
  assert.ok(await only(green), JSON.stringify(await table()));
  return { blue, green };
}

/**
 * Ends the scale-down delay of `green`'s switch now: whichever way it waits (a delayed call, or
 * a sleep inside green's deploy as before issue 33), its timer is made due and the engine told.
 * Resolves once the scale-down has run.
 */
async function fireScaleDown(green: string): Promise<void> {
  const sql = stack.db.sql;
  await sql.begin(async (tx) => {
    await tx`UPDATE engine_invocations SET due_at = now() WHERE status = 'scheduled' AND service = 'ScaleDownService' AND idempotency_key = ${`scale-down:${green}`}`;
    const sleeping = await tx<{ id: string }[]>`
      UPDATE engine_journal j SET wake_at = now() FROM engine_invocations i
      WHERE i.id = j.invocation_id AND i.service = 'DeployService' AND i.object_key = ${green} AND j.name = 'scale-down-delay' AND j.status = 'pending'
      RETURNING i.id`;
    for (const s of sleeping) await tx`UPDATE engine_invocations SET due_at = now() WHERE id = ${s.id} AND status = 'suspended'`;
    await tx`SELECT pg_notify('unkey_engine', 'n')`;
  });
  await until(async () => {
    const [open] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM engine_invocations
      WHERE status NOT IN ('completed', 'failed', 'cancelled')
        AND ((service = 'ScaleDownService' AND idempotency_key = ${`scale-down:${green}`}) OR (service = 'DeployService' AND object_key = ${green}))`;
    const [ran] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM engine_invocations WHERE service = 'ScaleDownService' AND idempotency_key = ${`scale-down:${green}`} AND status = 'completed'`;
    const [slept] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM engine_journal j JOIN engine_invocations i ON i.id = j.invocation_id
      WHERE i.service = 'DeployService' AND i.object_key = ${green} AND j.name = 'scale-down' AND j.status = 'done'`;
    return open!.n === 0 && ran!.n + slept!.n > 0;
  }, 15_000, 'the scale-down ran');
}

test('green holds no key while blue waits for its scale-down: a stop and a start of green is ready at once, not after the delay', async () => {
  const { blue, green } = await switched();
  assert.equal((await stack.api(`/v1/deployments/${blue}`)).body.desiredState, 'running', 'blue runs through the delay');
  // Defect 5: green's deploy slept out the delay in its exclusive handler, and the start's run
  // queued behind it (an hour here; up to a day).
  assert.equal((await stack.api(`/v1/deployments/${green}/stop`, { method: 'POST' })).status, 200);
  await status(green, ['stopped']);
  assert.equal((await stack.api(`/v1/deployments/${green}/start`, { method: 'POST' })).status, 200);
  const restarted = await status(green, ['ready', 'failed', 'stopped'], 30_000);
  assert.equal(restarted.status, 'ready', restarted.error);
  // Its stop emptied the table (blue had left it at the switch): the start takes it back.
  await until(() => only(green), 15_000, 'green serving again');
  assert.equal((await stack.api(`/v1/deployments/${blue}`)).body.desiredState, 'running', 'blue still waits for its scale-down');
});

test('when nothing moved blue, the scale-down stops it', async () => {
  const { blue, green } = await switched();
  await fireScaleDown(green);
  const b = await status(blue, ['stopped'], 15_000);
  assert.equal(b.desiredState, 'stopped');
  assert.ok(await only(green), JSON.stringify(await table()));
});

test('a stop and a start of blue after the switch are the last accepted command: the scale-down leaves it running', async () => {
  const { blue, green } = await switched();
  assert.equal((await stack.api(`/v1/deployments/${blue}/stop`, { method: 'POST' })).status, 200);
  await status(blue, ['stopped']);
  assert.equal((await stack.api(`/v1/deployments/${blue}/start`, { method: 'POST' })).status, 200);
  await status(blue, ['ready']);
  // Defect 6: when the delay ended, blue was stopped although a start came after the switch.
  await fireScaleDown(green);
  const b = (await stack.api(`/v1/deployments/${blue}`)).body;
  assert.deepEqual([b.status, b.desiredState], ['ready', 'running'], b.error);
  assert.ok(await only(green), JSON.stringify(await table()));
});
