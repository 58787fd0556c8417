// A deploy waits for the sentinels it created, not for the environment's existing ones (issue
// 33, seed 000): an existing sentinel that is still converging (here: a fleet operator's image
// that cannot be pulled, so it never will) does not hold a deploy, which becomes ready and shows
// that sentinel's state in its view instead. Before, the deploy called SentinelService.deploy on
// it too, queued behind the operator's call, and could wait ten minutes and fail on a sentinel it
// did not touch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentIn } from '../helpers/stack';
import { newId } from '../../src/ids';
import { tenancy } from '../../src/store';

const stack = await testStack();
const BOTH = ['us-east-1', 'eu-west-1'];
const sql = stack.db.sql;

test('a deploy is not held by an existing sentinel that does not converge; its view shows that sentinel', async () => {
  const environmentId = newId('env');
  await tenancy.insertEnvironment(sql, { environmentId, workspaceId: 'default', projectId: 'default', appId: 'default', slug: environmentId });
  const deploy = async () => {
    const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: BOTH, replicas: 1, environmentId } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.id as string;
  };
  // The first deploy creates the environment's sentinels and waits for them.
  const first = await deploy();
  await deploymentIn(stack, first, ['ready']);
  const [stuck] = await sql<{ id: string; region: string }[]>`SELECT id, region FROM sentinels WHERE environment_id = ${environmentId} AND region = 'eu-west-1'`;
  // An operator's sentinel deploy that will not converge (its call waits out its own timeout;
  // the test does not wait for it).
  void stack.api(`/v1/sentinels/${stuck!.id}/deploy`, { body: { image: 'ghcr.io/unkeyed/sentinel:pullfail' } }).catch(() => undefined);
  await until(async () => (await sql<{ deployStatus: string }[]>`SELECT deploy_status FROM sentinels WHERE id = ${stuck!.id}`)[0]?.deployStatus === 'progressing', 10_000, 'the sentinel converging');

  const second = await deploy();
  const d = await deploymentIn(stack, second, ['ready', 'failed'], 30_000);
  assert.equal(d.status, 'ready', d.error);
  const shown = (d.sentinels as { id: string; region: string; deployStatus: string; converged: boolean; image: string }[]).find((s) => s.id === stuck!.id);
  assert.ok(shown, JSON.stringify(d.sentinels));
  assert.deepEqual([shown.region, shown.deployStatus, shown.converged, shown.image], ['eu-west-1', 'progressing', false, 'ghcr.io/unkeyed/sentinel:pullfail']);
  assert.equal(d.sentinels.length, 2, 'one per region of the deployment');
  assert.equal((await sql<{ deployStatus: string }[]>`SELECT deploy_status FROM sentinels WHERE id = ${stuck!.id}`)[0]!.deployStatus, 'progressing', 'still converging: it held nothing');
});
