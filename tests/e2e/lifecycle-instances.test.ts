// Instance rows never outlive their pods for good (issue 23): after each full list of its pods
// krane reports the complete set of its region's instances, and ctrl removes the region's rows
// of pods that are not in it. The stale row here is what a krane killed with a buffered delete
// report leaves behind: a row for a pod that no longer exists, which no delete report will ever
// name (the krane that saw the pod go is gone), and which made an offline region's canary pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentsOf } from '../helpers/stack';

const stack = await testStack();
const { create, status } = deploymentsOf(stack, ['us-east-1', 'eu-west-1']);

const rows = async (id: string) =>
  (await stack.db.sql<{ region: string; podName: string; status: string }[]>`SELECT region, pod_name, status FROM instances WHERE deployment_id = ${id} ORDER BY region, pod_name`).map(
    (r) => `${r.region}/${r.podName}/${r.status}`,
  );

test('a restarted krane reports its region\'s complete set of instances and ctrl drops the rows of pods that are gone', async () => {
  const id = await create();
  await status(id, ['ready']);
  const live = await rows(id);
  assert.deepEqual(live, [`eu-west-1/${id}-0/running`, `us-east-1/${id}-0/running`]);
  // The pod `-1` was deleted while krane could not report it (its report was lost with the
  // process); its row says running, last updated a minute ago.
  await stack.stopKrane('us-east-1');
  await stack.db.sql`INSERT INTO instances (deployment_id, region, pod_name, address, status, reason, cpu_millicores, memory_mib, updated_at)
    VALUES (${id}, 'us-east-1', ${`${id}-1`}, null, 'running', null, 100, 128, now() - interval '1 minute')`;
  await stack.restartKrane('us-east-1');
  await until(async () => !(await rows(id)).includes(`us-east-1/${id}-1/running`), 15_000, 'the stale row removed');
  // Only that row: the live pods of both regions keep theirs.
  assert.deepEqual(await rows(id), live);
});
