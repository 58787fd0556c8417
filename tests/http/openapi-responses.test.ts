// Every answer of the public API (but the fleet rollout's, in openapi-responses-rollout.test.ts)
// matches the schema the OpenAPI document names for it, strictly, on a running stack: the
// deployments (rolling, a canary rolled back by its failing gate, one aborted by hand), traffic,
// versions and quarantine, sentinels, invocations, regions, tenants, keys, the audit trail and
// feature flags. The CLI and the web view are typed from these schemas (src/cli/api.gen.ts), so
// this is what keeps their types true to the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentIn } from '../helpers/stack';
import { startStandInPrometheus } from '../helpers/prometheus-stand-in';
import { conformance, documentedAnswers, ROLLOUT_PATHS } from './openapi-conformance';

// The canary's gate asks a stand-in Prometheus on loopback over http: allowed explicitly.
const stack = await testStack({ regions: ['us-east-1'], ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
const { call, covered } = conformance(stack);
async function deployment(body: Record<string, unknown>) {
  const r = await call('POST', '/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1, force: true, ...body } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r;
}

test('deployments: create, list, read, stop, start, rollback, promote, versions and traffic', async () => {
  const created = await deployment({});
  assert.equal(created.status, 202);
  const id = created.body.id as string;
  await deploymentIn(stack, id, ['ready']);
  await call('GET', '/v1/deployments');
  await call('GET', '/v1/deployments/{id}', { params: { id } });
  await call('POST', '/v1/deployments/{id}/promote', { params: { id } });
  await call('GET', '/v1/environments/{id}/traffic', { params: { id: 'default' } });
  await call('GET', '/v1/environments/{id}/versions', { params: { id: 'default' } });
  const back = await call('POST', '/v1/deployments/{id}/rollback', { params: { id }, body: {} });
  assert.equal(back.status, 202);
  const byVersion = await call('POST', '/v1/environments/{id}/rollback', { params: { id: 'default' }, body: { version: created.body.version } });
  assert.equal(byVersion.status, 202);
  for (const d of [back.body.id, byVersion.body.id]) await deploymentIn(stack, d, ['ready']);
  assert.equal((await call('POST', '/v1/deployments/{id}/stop', { params: { id } })).status, 200);
  assert.equal((await call('POST', '/v1/deployments/{id}/start', { params: { id } })).status, 200);
  // The detail of a stopped-then-started deployment, with its steps and regions.
  await deploymentIn(stack, id, ['ready']);
  await call('GET', '/v1/deployments/{id}', { params: { id } });
});

test('a canary rolled back by its failing gate, its quarantined image, and an abort by hand', async (t) => {
  const stable = (await deployment({})).body.id as string;
  await deploymentIn(stack, stable, ['ready']);
  const prometheus = await startStandInPrometheus(5);
  t.after(() => prometheus.close()); // an open server would keep the file from ending
  const analysis = { interval: '1s', prometheus: { url: prometheus.url, query: 'error_rate', max: 1 } };
  const crash = (await deployment({ image: 'registry.local/app:bad-1', strategy: { type: 'canary', steps: [{ weight: 50, pause: '1m' }], analysis } })).body.id as string;
  await deploymentIn(stack, crash, ['rolled_back', 'failed']);
  // The detail with its analysis checks (the evidence of the verdict).
  const detail = await call('GET', '/v1/deployments/{id}', { params: { id: crash } });
  assert.ok(detail.body.analysis.checks.length > 0, 'the verdict has its evidence');
  const q = await call('GET', '/v1/environments/{id}/quarantine', { params: { id: 'default' } });
  assert.ok(q.body.images.some((i: { image: string }) => i.image === 'registry.local/app:bad-1'), JSON.stringify(q.body));
  await call('DELETE', '/v1/environments/{id}/quarantine/{image}', { params: { id: 'default', image: 'registry.local/app:bad-1' } });

  const slow = (await deployment({ image: 'nginx:1.28', strategy: { type: 'canary', steps: [{ weight: 50, pause: '1h' }] } })).body.id as string;
  await until(async () => (await stack.api('/v1/environments/default/traffic')).body.backends.some((b: { deploymentId: string }) => b.deploymentId === slow), 30_000, 'the canary takes traffic');
  assert.equal((await call('POST', '/v1/deployments/{id}/abort', { params: { id: slow } })).status, 202);
  await deploymentIn(stack, slow, ['rolled_back']);
});

test('sentinels, invocations and regions', async () => {
  // A deploy of its own makes the environment's sentinel, so this test does not rely on the
  // deployments test having run first (shuffled, it may not have).
  await deploymentIn(stack, (await deployment({})).body.id as string, ['ready']);
  const list = await until(async () => {
    const r = await call('GET', '/v1/sentinels');
    return r.body.sentinels.length > 0 ? r : undefined;
  }, 30_000, 'a sentinel');
  const sid = list.body.sentinels[0].id as string;
  assert.equal((await call('POST', '/v1/sentinels/{id}/deploy', { params: { id: sid }, body: { replicas: 1 } })).status, 200);
  assert.equal((await call('POST', '/v1/sentinels/{id}/deploy', { params: { id: sid }, query: { wait: 'false' }, body: {} })).status, 202);
  const invocations = await call('GET', '/v1/invocations');
  const inv = invocations.body.invocations[0].id as string;
  await call('GET', '/v1/invocations/{id}', { params: { id: inv } });
  await call('POST', '/v1/invocations/{id}/cancel', { params: { id: inv } });
  await until(async () => (await call('GET', '/v1/regions')).body.some((r: { status: string }) => r.status === 'online'), 15_000, 'region online');
});

test('tenants, keys, the audit trail and feature flags', async () => {
  await call('POST', '/v1/workspaces', { body: { id: 'acme', name: 'Acme' } });
  await call('GET', '/v1/workspaces');
  await call('GET', '/v1/workspaces/{id}', { params: { id: 'acme' } });
  await call('POST', '/v1/workspaces/{id}/projects', { params: { id: 'acme' }, body: { id: 'shop', name: 'Shop' } });
  await call('GET', '/v1/workspaces/{id}/projects', { params: { id: 'acme' } });
  await call('GET', '/v1/projects/{id}', { params: { id: 'shop' } });
  await call('POST', '/v1/projects/{id}/environments', { params: { id: 'shop' }, body: { id: 'shop-prod', slug: 'prod', regions: ['us-east-1'] } });
  await call('GET', '/v1/projects/{id}/environments', { params: { id: 'shop' } });
  await call('GET', '/v1/environments/{id}', { params: { id: 'shop-prod' } });
  await call('GET', '/v1/workspaces/{id}/features', { params: { id: 'acme' } });
  await call('PUT', '/v1/workspaces/{id}/features', { params: { id: 'acme' }, body: { canary: false } });
  const key = await call('POST', '/v1/keys', { body: { name: 'ci', scope: { workspaceId: 'acme', projectId: 'shop' }, permissions: ['deployments.read'] } });
  await call('GET', '/v1/keys');
  await call('GET', '/v1/keys/self');
  await call('GET', '/v1/keys/self', { token: key.body.key });
  await call('DELETE', '/v1/keys/{id}', { params: { id: key.body.id } });
  await call('GET', '/v1/audit');
  await call('DELETE', '/v1/environments/{id}', { params: { id: 'shop-prod' } });
  await call('DELETE', '/v1/projects/{id}', { params: { id: 'shop' } });
  await call('DELETE', '/v1/workspaces/{id}', { params: { id: 'acme' } });
});

// Registered after the macrotask that registers the others, so a shuffled run (tests/run.ts
// --shuffle shuffles one batch of registrations at a time) still runs it last: it checks what
// they saw. Alone (--each-test) it has nothing to check.
await new Promise((resolve) => setImmediate(resolve));
test('every documented answer but the rollout\'s was seen and matched its schema', { skip: process.env.UNKEY_INFRA_TEST_PICK ? 'checks what the file\'s other tests saw' : false }, () => {
  const rest = [...documentedAnswers().keys()].filter((k) => !ROLLOUT_PATHS.test(k));
  assert.ok(rest.length > 0);
  assert.deepEqual(rest.filter((k) => !covered.has(k)), []);
});
