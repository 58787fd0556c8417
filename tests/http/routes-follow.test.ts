// A status report that changes which pods of a deployment run (are Ready) in a region records a
// routes change there for every table naming it (issue 33): the routes address those pods, so an
// autoscaler's new pod gets traffic once it is Ready, and one that stops being Ready loses it.
// A report that changes nothing about them (a relist naming the same pods, a pod still starting),
// or changes those of a backend at weight 0 (whose addresses the write giving it a share reads
// afresh), records none, so a region's reports do not churn its routes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { testDb } from '../helpers/db';
import { buildCtrlApp } from '../../src/http';
import { clusterStatusRoutes } from '../../src/http/cluster-status';
import { createLogger } from '../../src/log';
import { agentTokens, deployments, routes, topology } from '../../src/store';

const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };
const { sql } = await testDb();
const east = (await agentTokens.createAgentToken(sql, 'us-east-1')).token;
for (const id of ['dep-a', 'dep-b', 'dep-c']) {
  await deployments.insertDeployment(sql, { id, ...scope, image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1'] });
  await topology.upsertTopology(sql, { deploymentId: id, region: 'us-east-1', workspaceId: 'default', replicas: 1 });
}
await routes.setRoutes(sql, { environmentId: 'default', workspaceId: 'default', hostname: 'default-default.unkey.local', backends: [{ deploymentId: 'dep-a', weight: 100 }, { deploymentId: 'dep-b', weight: 0 }] });
const { app }: { app: FastifyInstance } = await buildCtrlApp({ sql, logger: createLogger('silent'), routes: [clusterStatusRoutes({ sql })] });
after(() => app.close());

const pod = (deploymentId: string, n: number, status: string, deleted = false) => ({ deploymentId, podName: `${deploymentId}-${n}`, address: null, status, reason: null, cpuMillicores: 100, memoryMib: 128, deleted });
const report = async (instances: unknown[], instanceSet?: unknown[]) => {
  const r = await app.inject({ method: 'POST', url: '/v1/cluster/deployments/status', headers: { authorization: `Bearer ${east}` }, payload: { region: 'us-east-1', instances, ...(instanceSet ? { instanceSet } : {}) } });
  assert.equal(r.statusCode, 200, r.body);
};
/** Routes changes recorded so far for the default environment in us-east-1. */
const changes = async () => (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_changes WHERE resource_type = 'environment_routes' AND resource_id = 'default' AND region = 'us-east-1'`)[0]!.n;

test('a report moves the routes only when a backend\'s running pods in the region change', async () => {
  const cases: [string, () => Promise<void>, number][] = [
    ['a backend\'s first pod Ready', () => report([pod('dep-a', 0, 'running')]), 1],
    ['the same pod reported again', () => report([pod('dep-a', 0, 'running')]), 0],
    ['a new pod still starting', () => report([pod('dep-a', 1, 'pending')]), 0],
    ['that pod Ready (an autoscaler\'s)', () => report([pod('dep-a', 1, 'running')]), 1],
    ['a pod of a deployment at weight 0', () => report([pod('dep-b', 0, 'running')]), 0],
    ['a pod of a deployment in no table', () => report([pod('dep-c', 0, 'running')]), 0],
    ['a pod no longer Ready', () => report([pod('dep-a', 1, 'pending')]), 1],
    ['a Ready pod gone', () => report([pod('dep-a', 0, 'running', true)]), 1],
  ];
  for (const [name, act, expected] of cases) {
    const before = await changes();
    await act();
    assert.equal((await changes()) - before, expected, name);
  }
});

test('a complete set that prunes a Ready pod\'s stale row moves the routes', async () => {
  await report([pod('dep-a', 2, 'running')]);
  // The row must be older than the set's age guard to be pruned (a row this recent may be newer
  // than the list the set came from).
  await sql`UPDATE instances SET updated_at = now() - interval '1 minute' WHERE deployment_id = 'dep-a'`;
  const before = await changes();
  await report([], [{ deploymentId: 'dep-b', podName: 'dep-b-0' }]);
  assert.equal((await changes()) - before, 1);
  assert.deepEqual((await sql`SELECT pod_name FROM instances WHERE deployment_id = 'dep-a'`).length, 0);
});
