// Attack (after issue 32), as an agent token: what a region's krane reports is checked per
// resource for sentinels and network policies, not for routing tables, and some of its text is
// neither bounded nor kept out of ctrl's log.
// - An `environment_routes` outcome in POST /v1/cluster/sentinels/status is stored for whatever
//   id it names (checked: only that `resource.region` is the token's), so the token of one region
//   records failures of routing tables it does not hold, and of ids that exist nowhere; they show
//   in GET /v1/regions. Sentinels and policies of another region are 403 (cluster-status.ts).
// - A resource id is free text up to 128 characters (wire ResourceRef.id), and ctrl logs
//   `resource` whole when a failure stands or an object was recreated; an id nothing checks (an
//   unknown routing table, a deployment that is "gone", which is harmless when it succeeded) puts
//   the agent's text in ctrl's log. SECURITY.md: "no text it supplied reaches ctrl's log".
// - An instance's `address` (and a sentinel's `runningImage`) have no length bound: megabytes of
//   an agent's text land in the row and in the tenant's deployment view.
// Each fails on main at 8edb159.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { testDb } from '../helpers/db';
import { buildCtrlApp } from '../../src/http';
import { clusterStatusRoutes } from '../../src/http/cluster-status';
import { agentTokens, deployments, routes, topology } from '../../src/store';
import { captureLogger } from './helpers';

const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };
const { sql } = await testDb();
const log = captureLogger('debug');
const east = (await agentTokens.createAgentToken(sql, 'us-east-1')).token;
const west = (await agentTokens.createAgentToken(sql, 'eu-west-1')).token;
await deployments.insertDeployment(sql, { id: 'dep-east', ...scope, image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1'] });
await topology.upsertTopology(sql, { deploymentId: 'dep-east', region: 'us-east-1', workspaceId: 'default', replicas: 1 });
// The default environment's routing table lives in us-east-1 only.
await routes.setRoutes(sql, { environmentId: 'default', workspaceId: 'default', hostname: 'default-production.unkey.local', backends: [{ deploymentId: 'dep-east', weight: 100 }] });
const { app }: { app: FastifyInstance } = await buildCtrlApp({ sql, logger: log.logger, routes: [clusterStatusRoutes({ sql })] });
after(() => app.close());

const post = (token: string, path: string, body: unknown) => app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${token}` }, payload: body as object });
const failures = async () => (await sql<{ resourceId: string; region: string }[]>`SELECT resource_id, region FROM apply_failures WHERE resource_type = 'environment_routes' ORDER BY resource_id`).map((r) => `${r.resourceId}@${r.region}`);

test("a region's token cannot record outcomes of routing tables it does not hold (403, nothing written)", async () => {
  const routesOf = (id: string) => ({ region: 'eu-west-1', applies: [{ resource: { type: 'environment_routes', id, region: 'eu-west-1' }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: 'x' }] });
  const other = await post(west, '/v1/cluster/sentinels/status', routesOf('default')); // us-east-1's table
  const nowhere = await post(west, '/v1/cluster/sentinels/status', routesOf('env-that-does-not-exist'));
  assert.deepEqual([other.statusCode, nowhere.statusCode], [403, 403], `${other.body} ${nowhere.body}`);
  assert.deepEqual(await failures(), []);
});

test("resource ids an agent made up reach no log line", async () => {
  const mark = 'agentIdMarker ignore previous instructions';
  const routesFailure = { region: 'us-east-1', applies: [{ resource: { type: 'environment_routes', id: mark, region: 'us-east-1' }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: 'x' }] };
  const recreated = { region: 'us-east-1', applies: [{ resource: { type: 'deployment_topology', id: mark, region: 'us-east-1' }, outcome: 'succeeded', recreated: 'y' }] };
  await post(east, '/v1/cluster/sentinels/status', routesFailure);
  await post(east, '/v1/cluster/deployments/status', recreated);
  assert.deepEqual(log.lines.filter((l) => l.includes('agentIdMarker')), [], 'agent text in a log line');
});

test("an instance's address is bounded (400 naming the field), nothing written", async () => {
  const pod = { deploymentId: 'dep-east', podName: 'dep-east-0', address: `10.0.0.1${'0'.repeat(1_000_000)}`, status: 'running', reason: null, cpuMillicores: 100, memoryMib: 128 };
  const r = await post(east, '/v1/cluster/deployments/status', { region: 'us-east-1', instances: [pod] });
  assert.equal(r.statusCode, 400, `a megabyte address: ${r.statusCode}`);
  assert.ok(JSON.parse(r.body).error.details.some((d: { field: string }) => d.field === 'instances.0.address'), r.body);
  assert.equal((await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM instances`)[0]!.n, 0);
});
