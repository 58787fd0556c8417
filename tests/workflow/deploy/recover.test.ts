// The recovery sweep (src/workflow/deploy/commands.ts recoverPendingDeployments, issue 10 defect 9): a
// deployment whose deploy workflow died is restarted with the input that workflow had (a
// restart after a stop must not take the environment's domain back), and the sweep reaches
// every stalled deployment, however many ahead of it have a live workflow.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../src/ids';
import { deployments } from '../../../src/store';
import { deployIdempotencyKey, recoverPendingDeployments } from '../../../src/workflow';
import { until } from '../../helpers/wait';
import { REGION, testCtrl } from '../../http/helpers';

// No krane: recovered deploys wait for instances (alive) and never finish; the backstop
// re-check is slowed so they cost nothing while they wait.
// The background sweep is slowed too, so only the test's own sweeps run.
const t = await testCtrl({}, { recheckMs: 600_000, recoverEveryMs: 3_600_000 });
const { engine, workflows } = t.ctrl;

const insert = (id: string) =>
  deployments.insertDeployment(t.db.sql, {
    id, workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default',
    image: 'nginx:1.27', buildContext: null, cpuMillicores: 100, memoryMib: 64, replicas: 1, port: 8080, command: [], env: {}, regions: [REGION],
  });

const deployRuns = async (id: string) =>
  (await engine.listInvocations({ target: workflows.deploy.name, key: id })).filter((i) => i.handler === 'deploy');

test('a restart whose workflow died is recovered as a restart (restart: true)', async () => {
  const id = newId('dep');
  // A restart (start after stop) that fails for good: the row does not exist yet.
  const dead = await engine.send(workflows.deploy, 'deploy', { restart: true }, { key: id, idempotencyKey: `${deployIdempotencyKey(id)}:start:1` });
  await until(async () => (await engine.getInvocation(dead.id)).status === 'failed', 10_000, 'the restart failed');
  await insert(id);

  assert.equal(await recoverPendingDeployments(workflows.commands, 0), 1);
  const runs = await deployRuns(id);
  assert.equal(runs.length, 2);
  const recovered = runs.find((r) => r.id !== dead.id)!;
  assert.deepEqual(recovered.input, { restart: true }, 'the recovered run is a restart too');
});

test('the sweep pages past more than a page of stalled deployments whose workflows are alive', async () => {
  // 100 (the old single page) of the oldest stalled deployments have a live workflow: one
  // scheduled an hour from now. The newest one has none.
  const live: string[] = [];
  for (let i = 0; i < 100; i++) live.push(newId('dep'));
  for (const id of live) {
    await insert(id);
    await engine.send(workflows.deploy, 'deploy', { restart: false }, { key: id, idempotencyKey: deployIdempotencyKey(id), delayMs: 3_600_000 });
  }
  const stranded = newId('dep');
  await insert(stranded);

  assert.equal(await recoverPendingDeployments(workflows.commands, 0), 1, 'the stranded deployment behind them is found');
  assert.equal((await deployRuns(stranded)).length, 1);
  for (const id of live.slice(0, 3)) assert.equal((await deployRuns(id)).length, 1, 'live workflows are left alone');
});
