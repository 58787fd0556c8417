// Deployments stuck on their way to ready without a live workflow are restarted by the
// recovery sweep; one with a live workflow is left alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { newId } from '../../src/ids';
import { deployments } from '../../src/store';
import { recoverPendingDeployments, deployIdempotencyKey } from '../../src/workflow';
import { TERMINAL_STATUSES } from '../../src/workflow/engine/invocation-store';

const stack = await testStack({ regions: ['us-east-1'] });
const wf = () => stack.ctrl.workflows;

const insert = (id: string) =>
  deployments.insertDeployment(stack.db.sql, {
    id,
    workspaceId: 'default',
    projectId: 'default',
    appId: 'default',
    environmentId: 'default',
    image: 'nginx:1.27',
    buildContext: null,
    cpuMillicores: 100,
    memoryMib: 64,
    replicas: 1,
    port: 8080,
    command: [],
    env: {},
    regions: ['us-east-1'],
  });

const status = async (id: string) => (await deployments.getDeployment(stack.db.sql, id))!.status;

test('a deployment whose workflow never started, and one whose workflow died, are restarted', async () => {
  const never = newId('dep');
  await insert(never);

  // A workflow that fails for good before it touches the row (the row did not exist yet).
  const died = newId('dep');
  const first = await stack.ctrl.engine.send(wf().deploy, 'deploy', { restart: false }, { key: died, idempotencyKey: deployIdempotencyKey(died) });
  await until(async () => (await stack.ctrl.engine.getInvocation(first.id)).status === 'failed', 10_000, 'first run failed');
  await insert(died);

  const started = await recoverPendingDeployments(wf().commands, 0);
  assert.equal(started, 2);
  await until(async () => (await status(never)) === 'ready' && (await status(died)) === 'ready', 20_000, 'both ready');
  // The row says ready before the workflow's last steps and finish commit: the second run is
  // read once it has ended (CI with burners read it still running), then must have completed.
  const runs = await until(async () => {
    const list = (await stack.ctrl.engine.listInvocations({ target: 'DeployService', key: died })).filter((i) => i.handler === 'deploy');
    return list.length === 2 && list.every((r) => TERMINAL_STATUSES.includes(r.status)) ? list : undefined;
  }, 20_000, 'both runs ended');
  assert.deepEqual(runs.map((r) => r.status).sort(), ['completed', 'failed']);
  assert.equal(await recoverPendingDeployments(wf().commands, 0), 0, 'nothing left to recover');
});

test('a deployment with a live workflow is left alone', async () => {
  // Pods that never become ready keep the deploy waiting (alive, suspended) on its instances.
  const slow = await testStack({ regions: ['us-east-1'], readyDelayMs: 600_000 });
  const r = await slow.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  const state = async () => (await deployments.getDeployment(slow.db.sql, r.body.id))!.status;
  await until(async () => (await state()) === 'deploying', 15_000, 'deploying');
  assert.equal(await recoverPendingDeployments(slow.ctrl.workflows.commands, 0), 0);
  assert.equal(await state(), 'deploying');
  const runs = (await slow.ctrl.engine.listInvocations({ target: 'DeployService', key: r.body.id })).filter((i) => i.handler === 'deploy');
  assert.equal(runs.length, 1);
});
