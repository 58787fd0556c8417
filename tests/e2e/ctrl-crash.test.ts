// ctrl is SIGKILLed in the middle of a deploy and started again: the deploy resumes from the
// engine's journal on the new process and completes exactly once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { testDb } from '../helpers/db';
import { spawnBundle, waitForHttp } from '../helpers/bundle';
import { freePort } from '../helpers/postgres';
import { until } from '../helpers/stack';
import { adminApi, killableCtrlEnv, regionBeside } from '../helpers/ctrl-process';

test('ctrl killed mid-deploy and restarted: the deploy completes exactly once', async () => {
  const db = await testDb();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const adminToken = 'admin-token-for-crash-test';
  const regions = ['us-east-1', 'eu-west-1'];
  const tokens = Object.fromEntries(regions.map((r) => [r, `tok-${r}-crash-test`]));
  const env = killableCtrlEnv({ databaseUrl: db.url, adminToken, agentTokens: tokens, port });
  let ctrl: ChildProcess = spawnBundle(['ctrl'], { env });
  after(() => ctrl.kill('SIGKILL'));
  await waitForHttp(`${url}/readyz`);

  // Pods take a while to become ready, so the deploy is waiting on instances when ctrl dies.
  for (const region of regions) await regionBeside(url, region, tokens[region]!, { readyDelayMs: 1500 });

  const api = adminApi(url, adminToken);

  const created = await api('/v1/deployments', { image: 'nginx:1.27', regions, replicas: 2 });
  assert.equal(created.status, 202);
  const id = created.body.id as string;
  await until(async () => {
    const [t] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_topology WHERE deployment_id = ${id}`;
    const [d] = await db.sql<{ status: string }[]>`SELECT status FROM deployments WHERE id = ${id}`;
    return t!.n === 2 && d!.status === 'deploying';
  }, 20_000, 'deploy in progress');

  ctrl.kill('SIGKILL');
  await once(ctrl, 'exit');
  const [mid] = await db.sql<{ status: string }[]>`SELECT status FROM deployments WHERE id = ${id}`;
  assert.notEqual(mid!.status, 'ready', 'killed before the deploy finished');

  ctrl = spawnBundle(['ctrl'], { env });
  await waitForHttp(`${url}/readyz`);
  // Normally 6-10 s. It once ran past 30 s in CI with nothing to read, so a timeout now says
  // what ctrl saw: the topologies, the instance rows (and their freshness) and the invocations.
  const done = await until(async () => {
    const [d] = await db.sql<{ status: string; error: string | null }[]>`SELECT status, error FROM deployments WHERE id = ${id}`;
    return d!.status === 'ready' || d!.status === 'failed' ? d : undefined;
  }, 60_000, 'deploy finished after restart').catch(async (err: Error) => {
    const seen = {
      topology: await db.sql`SELECT region, desired_status, updated_at FROM deployment_topology WHERE deployment_id = ${id}`,
      instances: await db.sql`SELECT region, pod_name, status, updated_at FROM instances WHERE deployment_id = ${id}`,
      invocations: await db.sql`SELECT id, handler, status, attempts, lease_owner, updated_at FROM engine_invocations WHERE object_key = ${id}`.catch((e: Error) => e.message),
    };
    throw new Error(`${err.message}; ctrl saw ${JSON.stringify(seen)}`);
  });
  assert.equal(done.status, 'ready', done.error ?? '');

  // Exactly once: one outbox row per region from the topology step, one deploy invocation.
  const changes = await db.sql<{ region: string }[]>`
    SELECT region FROM deployment_changes WHERE resource_type = 'deployment_topology' AND resource_id = ${id} ORDER BY region`;
  assert.deepEqual(changes.map((c) => c.region), ['eu-west-1', 'us-east-1']);
  const topo = await db.sql`SELECT 1 FROM deployment_topology WHERE deployment_id = ${id}`;
  assert.equal(topo.length, 2);
  const invocations = (await api(`/v1/invocations?target=DeployService`)).body.invocations.filter((i: any) => i.key === id && i.handler === 'deploy');
  assert.equal(invocations.length, 1);
  assert.equal(invocations[0].status, 'completed');
  const statuses = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployments WHERE id = ${id} AND status = 'ready'`;
  assert.equal(statuses[0]!.n, 1);
});
