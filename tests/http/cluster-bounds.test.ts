// What an agent sends is input like any other (issue 32): every integer of a report is bounded by
// the column it lands in (a 400 naming the field, never a 500 from PostgreSQL's 22003), and no
// text an agent supplied (an apply failure's reason, why an object was recreated) reaches a log
// line: its length and a hash stand in for it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { testDb } from '../helpers/db';
import { buildCtrlApp } from '../../src/http';
import { clusterStatusRoutes } from '../../src/http/cluster-status';
import { agentTokens, deployments, sentinels, topology } from '../../src/store';
import { captureLogger } from './helpers';

const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };
const { sql } = await testDb();
const log = captureLogger('debug');
const east = (await agentTokens.createAgentToken(sql, 'us-east-1')).token;
await deployments.insertDeployment(sql, { id: 'dep-east', ...scope, image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1'] });
await topology.upsertTopology(sql, { deploymentId: 'dep-east', region: 'us-east-1', workspaceId: 'default', replicas: 1 });
await sentinels.ensureSentinel(sql, { id: 'snt-east', ...scope, region: 'us-east-1', image: 's:1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
const { app }: { app: FastifyInstance } = await buildCtrlApp({ sql, logger: log.logger, routes: [clusterStatusRoutes({ sql })] });
after(() => app.close());

const post = (path: string, body: unknown) => app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${east}` }, payload: body as object });
const pod = (over: Record<string, unknown> = {}) => ({ deploymentId: 'dep-east', podName: 'dep-east-0', address: null, status: 'running', reason: null, cpuMillicores: 100, memoryMib: 128, ...over });
const scaler = (over: Record<string, unknown> = {}) => ({ deploymentId: 'dep-east', minReplicas: 1, maxReplicas: 3, currentReplicas: 1, desiredReplicas: 1, cpuUtilization: 50, ...over });

test('an integer past its column is a 400 naming the field, and nothing is written', async () => {
  const cases: [string, unknown, string][] = [
    ['/v1/cluster/deployments/status', { region: 'us-east-1', instances: [pod({ generation: 3_000_000_000 })] }, 'instances.0.generation'],
    ['/v1/cluster/deployments/status', { region: 'us-east-1', autoscalers: [scaler({ maxReplicas: 3_000_000_000 })] }, 'autoscalers.0.maxReplicas'],
    ['/v1/cluster/deployments/status', { region: 'us-east-1', autoscalers: [scaler({ desiredReplicas: 2 ** 40 })] }, 'autoscalers.0.desiredReplicas'],
    ['/v1/cluster/deployments/status', { region: 'us-east-1', autoscalers: [scaler({ cpuUtilization: 2 ** 31 })] }, 'autoscalers.0.cpuUtilization'],
  ];
  for (const [path, body, field] of cases) {
    const r = await post(path, body);
    assert.equal(r.statusCode, 400, `${field}: ${r.body}`);
    assert.ok(JSON.parse(r.body).error.details.some((d: { field: string }) => d.field === field), `${field} named: ${r.body}`);
  }
  assert.equal((await sql`SELECT count(*)::int AS n FROM instances`)[0]!.n, 0);
  assert.equal((await sql`SELECT count(*)::int AS n FROM topology_autoscalers`)[0]!.n, 0);
  // The largest value the column holds is accepted.
  const ok = await post('/v1/cluster/deployments/status', { region: 'us-east-1', instances: [pod({ generation: 2 ** 31 - 1 })] });
  assert.equal(ok.statusCode, 200, ok.body);
});

test("an agent's apply-failure reason and recreation note reach no log line; their length does", async () => {
  const mark = 'agentTextMarker\u001b[31m';
  const failed = { resource: { type: 'deployment_topology', id: 'dep-east', region: 'us-east-1' }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: `bad ${mark} spec` };
  const r = await post('/v1/cluster/deployments/status', { region: 'us-east-1', applies: [failed] });
  assert.equal(r.statusCode, 200, r.body);
  const recreated = { resource: { type: 'deployment_topology', id: 'dep-east', region: 'us-east-1' }, outcome: 'succeeded', recreated: `immutable ${mark}` };
  assert.equal((await post('/v1/cluster/deployments/status', { region: 'us-east-1', applies: [recreated] })).statusCode, 200);
  const sfailed = { resource: { type: 'sentinel', id: 'snt-east', region: 'us-east-1' }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: `sentinel ${mark}` };
  assert.equal((await post('/v1/cluster/sentinels/status', { region: 'us-east-1', applies: [sfailed] })).statusCode, 200);
  const lines = log.lines.filter((l) => /krane (could not apply|recreated)/.test(l));
  assert.ok(lines.length >= 3, `the failures are logged: ${lines.length} lines`);
  assert.deepEqual(log.lines.filter((l) => l.includes('agentTextMarker')), [], 'agent text in a log line');
  assert.ok(lines.every((l) => /"reasonLength":\d+/.test(l) || /"whyLength":\d+/.test(l)), lines.join('\n'));
});
