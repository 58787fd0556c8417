// A status report that makes a pod Ready, racing a canary step that gives the pod's deployment
// its first share (review finding 4). The feed loads a routes table when it sends a change row,
// so the region's routes list a Ready pod only if some routes change row of the region commits
// after the pod's row does. The report records one only for tables giving the deployment a
// share; the step records one for its own write. If the report read the table (weight 0) while
// the step was open and committed after it, neither row comes after the pod: the feed sent the
// step's table without the pod and nothing sends it again. The order is made to happen with
// explicit transactions: the step holds the table, and a deferred trigger holds the report's
// commit until the step has committed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { testDb } from '../helpers/db';
import { until } from '../helpers/wait';
import { buildCtrlApp } from '../../src/http';
import { clusterStatusRoutes } from '../../src/http/cluster-status';
import { createLogger } from '../../src/log';
import { agentTokens, deployments, routes, tenancy, topology } from '../../src/store';
import { loadDesiredRows } from '../../src/store/desired-state';

const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };
const TABLE = { environmentId: 'default', workspaceId: 'default', hostname: 'default-default.unkey.local' };
const { sql } = await testDb();
const token = (await agentTokens.createAgentToken(sql, 'us-east-1')).token;
for (const id of ['dep-stable', 'dep-canary']) {
  await deployments.insertDeployment(sql, { id, ...scope, image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1'] });
  await topology.upsertTopology(sql, { deploymentId: id, region: 'us-east-1', workspaceId: 'default', replicas: 1 });
}
// The canary has joined at weight 0 (its pods starting).
await routes.setRoutes(sql, { ...TABLE, backends: [{ deploymentId: 'dep-stable', weight: 100 }, { deploymentId: 'dep-canary', weight: 0 }] });
// Holds a committing report while a session holds advisory lock 4242 (test only): deferred, so
// it runs at COMMIT, after every statement of the report's transaction.
await sql.unsafe(`
  CREATE FUNCTION test_hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NULL; END $$;
  CREATE CONSTRAINT TRIGGER test_hold_commit AFTER INSERT ON instances
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_hold_commit();`);
const { app }: { app: FastifyInstance } = await buildCtrlApp({ sql, logger: createLogger('silent'), routes: [clusterStatusRoutes({ sql })] });
after(() => app.close());

/** Sessions of this database waiting for a lock (a row lock shows as a wait on a transaction). */
const lockWaiters = async () =>
  (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)[0]!.n;
const routesChanges = async (environmentId = 'default') =>
  (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_changes WHERE resource_type = 'environment_routes' AND resource_id = ${environmentId} AND region = 'us-east-1'`)[0]!.n;

test('a pod made Ready while a canary step gives its deployment a first share gets a routes change after both', async () => {
  const step = await sql.reserve();
  const holder = await sql.reserve();
  let reported: Promise<{ statusCode: number; body: string }> | undefined;
  try {
    await holder`BEGIN`;
    await holder`SELECT pg_advisory_xact_lock(4242)`;
    // The canary step: the traffic lock, then the write giving the canary its first share.
    await step`BEGIN`;
    await step`SET LOCAL idle_in_transaction_session_timeout = '60s'`;
    await routes.lockRoutes(step, TABLE);
    await routes.setRoutes(step, { ...TABLE, backends: [{ deploymentId: 'dep-stable', weight: 90 }, { deploymentId: 'dep-canary', weight: 10 }] });
    const pod = { deploymentId: 'dep-canary', podName: 'dep-canary-0', address: null, status: 'running', reason: null, cpuMillicores: 100, memoryMib: 128, deleted: false };
    reported = app.inject({ method: 'POST', url: '/v1/cluster/deployments/status', headers: { authorization: `Bearer ${token}` }, payload: { region: 'us-east-1', instances: [pod] } });
    // The report waits: for the table (it takes it before its writes) or at its commit.
    await until(async () => (await lockWaiters()) === 1, 30_000, 'the report waiting');
    await step`COMMIT`;
    const atStep = await routesChanges();
    // What the feed sends for the step's change row, read now (the report not committed): no pod.
    const [sent] = await loadDesiredRows(sql, 'us-east-1', [{ type: 'environment_routes', id: 'default' }]);
    assert.ok(sent && !JSON.stringify(sent).includes('dep-canary-0'), 'the step\'s table is sent without the pod');
    await holder`COMMIT`;
    const r = await reported;
    assert.equal(r.statusCode, 200, r.body);
    assert.ok(
      (await routesChanges()) > atStep,
      'the report committed after the step and recorded no routes change: the region\'s routes never list its Ready pod',
    );
  } finally {
    await step`ROLLBACK`.catch(() => {});
    await holder`ROLLBACK`.catch(() => {});
    step.release();
    holder.release();
    await reported?.catch(() => {});
  }
});

test('a pod made Ready while the environment\'s first traffic write creates its table gets a routes change after both', async () => {
  // A table that does not exist yet cannot be held: the write creating it and the report meet
  // on the environment's advisory lock instead (routes.holdRoutesOf).
  await tenancy.insertEnvironment(sql, { environmentId: 'env-new', workspaceId: 'default', projectId: 'default', appId: 'default', slug: 'env-new' });
  await deployments.insertDeployment(sql, { id: 'dep-first', ...scope, environmentId: 'env-new', image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 2, port: 8080, command: [], env: {}, regions: ['us-east-1'] });
  await topology.upsertTopology(sql, { deploymentId: 'dep-first', region: 'us-east-1', workspaceId: 'default', replicas: 2 });
  const table = { environmentId: 'env-new', workspaceId: 'default', hostname: 'default-env-new.unkey.local' };
  const step = await sql.reserve();
  const holder = await sql.reserve();
  let reported: Promise<{ statusCode: number; body: string }> | undefined;
  try {
    await holder`BEGIN`;
    await holder`SELECT pg_advisory_xact_lock(4242)`;
    // The deploy's first traffic write: the table created, all traffic to the deployment.
    await step`BEGIN`;
    await step`SET LOCAL idle_in_transaction_session_timeout = '60s'`;
    await routes.lockRoutes(step, table);
    await routes.setRoutes(step, { ...table, backends: [{ deploymentId: 'dep-first', weight: 100 }] });
    const pod = { deploymentId: 'dep-first', podName: 'dep-first-1', address: null, status: 'running', reason: null, cpuMillicores: 100, memoryMib: 128, deleted: false };
    reported = app.inject({ method: 'POST', url: '/v1/cluster/deployments/status', headers: { authorization: `Bearer ${token}` }, payload: { region: 'us-east-1', instances: [pod] } });
    await until(async () => (await lockWaiters()) === 1, 30_000, 'the report waiting');
    await step`COMMIT`;
    const atStep = await routesChanges('env-new');
    await holder`COMMIT`;
    const r = await reported;
    assert.equal(r.statusCode, 200, r.body);
    assert.ok((await routesChanges('env-new')) > atStep, 'the report committed after the table was created and recorded no routes change');
  } finally {
    await step`ROLLBACK`.catch(() => {});
    await holder`ROLLBACK`.catch(() => {});
    step.release();
    holder.release();
    await reported?.catch(() => {});
  }
});
