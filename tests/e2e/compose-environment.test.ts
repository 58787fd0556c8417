// A deployment of a deleted environment (issue 33, defect 2): a start is refused (the
// environment is re-checked under its row lock, so a deletion and a start cannot both win),
// a stop still answers, nothing is left running that nobody can stop, and a deployment left on
// its way there (by the bug before the fix) ends once instead of being restarted by the
// recovery sweep every 30 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentIn } from '../helpers/stack';
import { newId } from '../../src/ids';
import { tenancy } from '../../src/store';
import { recoverPendingDeployments } from '../../src/workflow';
import { resourceForKind } from '../../src/kube-sim';

const stack = await testStack();
const BOTH = ['us-east-1', 'eu-west-1'];
const sql = stack.db.sql;
const STS = resourceForKind('apps/v1', 'StatefulSet')!;

/** Statefulsets of `id` in every region's cluster (not being deleted). */
const workloads = (id: string) =>
  [...stack.regions.values()].flatMap((r) =>
    r.sim.sim.store.list(STS, undefined).filter((o) => o.metadata.labels?.['unkey.com/deployment.id'] === id && !o.metadata.deletionTimestamp),
  ).length;
/** The deploy runs of `id` so far (a sweep that restarts it adds one). */
const runs = async (id: string) => (await stack.ctrl.engine.listInvocations({ target: 'DeployService', key: id, limit: 100 })).filter((i) => i.handler === 'deploy');
/** Runs the recovery sweep once; answers how many runs of `id` it started. */
async function sweep(id: string): Promise<number> {
  const before = (await runs(id)).length;
  await recoverPendingDeployments(stack.ctrl.workflows.commands, 0);
  return (await runs(id)).length - before;
}
const running = async (id: string) => (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_topology WHERE deployment_id = ${id} AND desired_status = 'running'`)[0]!.n;

/** A deployment that ran in an environment since deleted: stopped, its workloads gone. */
async function inDeletedEnvironment(): Promise<{ id: string; environmentId: string }> {
  const environmentId = newId('env');
  await tenancy.insertEnvironment(sql, { environmentId, workspaceId: 'default', projectId: 'default', appId: 'default', slug: environmentId });
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: BOTH, replicas: 1, environmentId } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.id as string;
  await deploymentIn(stack, id, ['ready']);
  assert.equal((await stack.api(`/v1/deployments/${id}/stop`, { method: 'POST' })).status, 200);
  await deploymentIn(stack, id, ['stopped']);
  await until(() => workloads(id) === 0, 15_000, 'its workloads gone');
  const deleted = await until(async () => {
    const d = await stack.api(`/v1/environments/${environmentId}`, { method: 'DELETE' });
    return d.status === 200 ? d : undefined;
  }, 15_000, 'the environment deleted');
  assert.equal(deleted.body.deleted, true);
  return { id, environmentId };
}

test('a start in a deleted environment is refused and brings nothing back; a stop there still answers, a promote is refused as not ready', async () => {
  const { id, environmentId } = await inDeletedEnvironment();
  const start = await stack.api(`/v1/deployments/${id}/start`, { method: 'POST' });
  assert.equal(start.status, 409, JSON.stringify(start.body));
  assert.match(start.body.error.message, new RegExp(`environment ${environmentId} was deleted`));
  const d = (await stack.api(`/v1/deployments/${id}`)).body;
  assert.deepEqual([d.status, d.desiredState], ['stopped', 'stopped']);
  assert.equal(await running(id), 0, 'no topology runs');
  const stop = await stack.api(`/v1/deployments/${id}/stop`, { method: 'POST' });
  assert.equal(stop.status, 200, JSON.stringify(stop.body));
  // A promote is refused for what it is (the model found it answering 422 on the missing table).
  const promote = await stack.api(`/v1/deployments/${id}/promote`, { method: 'POST' });
  assert.equal(promote.status, 409, JSON.stringify(promote.body));
  assert.equal(promote.body.error.code, 'ERR_DEPLOYMENT_NOT_READY');
  assert.equal(await sweep(id), 0, 'nothing for the recovery sweep');
});

test('a deployment left on its way in a deleted environment ends failed at the sweep\'s first restart, writing no workload, and is not restarted again', async () => {
  const { id, environmentId } = await inDeletedEnvironment();
  // What a start before the fix left: accepted, desired running, the deploy failed for good.
  await sql`UPDATE deployments SET status = 'deploying', desired_state = 'running', desired_generation = desired_generation + 1 WHERE id = ${id}`;
  assert.equal(await sweep(id), 1);
  const d = await deploymentIn(stack, id, ['failed', 'stopped'], 20_000);
  assert.equal(d.status, 'failed');
  assert.match(d.error, new RegExp(`environment ${environmentId} was deleted`));
  assert.equal(await running(id), 0, 'no topology runs');
  assert.equal(workloads(id), 0, 'no workload came back');
  await until(async () => (await runs(id)).every((i) => ['completed', 'failed', 'cancelled'].includes(i.status)), 10_000, 'its runs ended');
  assert.equal(await sweep(id), 0, 'not restarted again');
});
