// ctrl SIGKILLed in the middle of a canary step (issue 13): no graceful hand-back of leases; the
// restarted process takes the invocation over once its lease lapses, resumes the walk from the
// journal, and the canary ends at 100% with the stable deployment stopped, each step once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { testDb } from '../helpers/db';
import { spawnBundle, waitForHttp } from '../helpers/bundle';
import { freePort } from '../helpers/postgres';
import { until } from '../helpers/stack';
import { adminApi, killableCtrlEnv, regionBeside } from '../helpers/ctrl-process';

test('ctrl killed mid-step: the canary resumes from its journal on the new process and ends at 100%', async () => {
  const db = await testDb();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const adminToken = 'admin-token-for-canary-kill';
  const token = 'tok-us-east-1-canary-kill';
  const env = killableCtrlEnv({ databaseUrl: db.url, adminToken, agentTokens: { 'us-east-1': token }, port });
  let ctrl: ChildProcess = spawnBundle(['ctrl'], { env });
  after(() => ctrl.kill('SIGKILL'));
  await waitForHttp(`${url}/readyz`);
  await regionBeside(url, 'us-east-1', token, { readyDelayMs: 20, leaderElect: false });
  const api = adminApi(url, adminToken);
  const traffic = async () => (await api('/v1/environments/default/traffic')).body.backends?.map((b: any) => `${b.deploymentId}:${b.weight}`).join(',');

  const stable = (await api('/v1/deployments', { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 })).body.id;
  await until(async () => (await traffic()) === `${stable}:100`, 30_000, 'stable at 100%');
  const created = await api('/v1/deployments', { image: 'nginx:1.28', regions: ['us-east-1'], replicas: 1, strategy: { type: 'canary', steps: [{ weight: 10, pause: '3s' }, { weight: 60, pause: '1s' }] } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.id as string;
  await until(async () => (await traffic()) === `${stable}:90,${id}:10`, 30_000, 'first step');

  ctrl.kill('SIGKILL');
  await once(ctrl, 'exit');
  ctrl = spawnBundle(['ctrl'], { env });
  await waitForHttp(`${url}/readyz`);

  const done = await until(async () => {
    const d = (await api(`/v1/deployments/${id}`)).body;
    return ['ready', 'failed', 'rolled_back'].includes(d.status) ? d : undefined;
  }, 45_000, 'canary finished after the kill');
  assert.equal(done.status, 'ready', done.error ?? '');
  assert.equal(await traffic(), `${id}:100`);
  await until(async () => (await api(`/v1/deployments/${stable}`)).body.status === 'stopped', 20_000, 'stable stopped');
  const runs = (await api('/v1/invocations?target=DeployService')).body.invocations.filter((i: any) => i.key === id && i.handler === 'deploy');
  assert.equal(runs.length, 1, 'one deploy invocation, taken over, not started again');
  // Each step's weight was written once: one traffic change per step plus the 0% join and 100%.
  const [weights] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_changes WHERE resource_type = 'environment_routes'`;
  assert.ok(weights!.n <= 5, `routes changes: ${weights!.n}`);
});
