// environment_routes over the change feed (issue 13): a region's full sync carries the routing
// table with its backends' replicas there and the ordinals of their pods krane reported running
// there (issue 33), a change reaches each region the table applies to, and a region the backends
// left gets a delete. The feed is read as krane reads it (NDJSON).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { instances, routes } from '../../src/store';
import { TOKENS, deployTo, readFeed, startFeedServer } from './helpers';

const db = await testDb();
const server = await startFeedServer(db.url, { waitLimitMs: 300, heartbeatMs: 100 });
after(() => server.close());

const table = (backends: { deploymentId: string; weight: number }[]) =>
  routes.setRoutes(db.sql, { environmentId: 'default', workspaceId: 'default', hostname: 'default-default.unkey.local', backends });
const routeLines = (lines: any[]) => lines.filter((l) => l.type === 'change' && l.resource.type === 'environment_routes');
const feed = (region: 'us-east-1' | 'eu-west-1', cursor?: string) => readFeed(server.url, TOKENS[region], { wait: '0.3', ...(cursor ? { cursor } : {}) });
const cursorOf = (lines: any[]) => lines.find((l) => l.type === 'snapshot_end' || l.type === 'end').cursor as string;

test('full sync carries the table where it applies; changes reach each region; a region the backends left gets a delete', async () => {
  const east = await deployTo(db.sql, 'us-east-1', 3);
  // Two of its three pods running (Ready), one still starting: the routes address the two.
  const pod = (n: number, status: 'running' | 'pending') => ({ deploymentId: east, region: 'us-east-1', podName: `${east}-${n}`, address: null, status, reason: null, cpuMillicores: 100, memoryMib: 64 });
  await instances.upsertInstances(db.sql, [pod(0, 'running'), pod(1, 'pending'), pod(2, 'running')]);
  await table([{ deploymentId: east, weight: 100 }]);

  const full = await feed('us-east-1');
  const [line] = routeLines(full.lines);
  assert.deepEqual(line.resource, { type: 'environment_routes', id: 'default', region: 'us-east-1' });
  assert.equal(line.state.action, 'apply');
  assert.equal(line.state.namespace, 'sentinel');
  assert.equal(line.state.hostname, 'default-default.unkey.local');
  assert.deepEqual(line.state.backends, [{ deploymentId: east, weight: 100, replicas: 3, ordinals: [0, 2] }]);
  const westFull = await feed('eu-west-1');
  assert.deepEqual(routeLines(westFull.lines), [], 'a region without backends has no table');

  const west = await deployTo(db.sql, 'eu-west-1', 2);
  await table([{ deploymentId: east, weight: 50 }, { deploymentId: west, weight: 50 }]);
  const eastChange = routeLines((await feed('us-east-1', cursorOf(full.lines))).lines).at(-1);
  assert.deepEqual(eastChange.state.backends, [{ deploymentId: east, weight: 50, replicas: 3, ordinals: [0, 2] }, { deploymentId: west, weight: 50, replicas: 0, ordinals: [] }]);
  const westNow = await feed('eu-west-1', cursorOf(westFull.lines));
  const westChange = routeLines(westNow.lines).at(-1);
  assert.deepEqual(westChange.state.backends, [{ deploymentId: east, weight: 50, replicas: 0, ordinals: [] }, { deploymentId: west, weight: 50, replicas: 2, ordinals: [] }]);

  const before = await feed('us-east-1');
  await table([{ deploymentId: west, weight: 100 }]);
  const left = routeLines((await feed('us-east-1', cursorOf(before.lines))).lines).at(-1);
  assert.deepEqual(left.state, { action: 'delete' });
  assert.deepEqual(routeLines((await feed('us-east-1')).lines), [], 'and its next full sync has no table either');
});
