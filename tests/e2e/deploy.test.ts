import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { testStack, until } from '../helpers/stack';
import { WORKLOAD_NAMESPACE } from '../../src/sync/wire';
import { KubeClient } from '../../src/kube/client';

const stack = await testStack();

async function waitStatus(id: string, statuses: string[], ms = 20_000) {
  return until(async () => {
    const r = await stack.api(`/v1/deployments/${id}`);
    return statuses.includes(r.body.status) ? r.body : undefined;
  }, ms, `deployment ${id} in ${statuses.join('/')}`);
}

const apiVersions = { StatefulSet: 'apps/v1', Service: 'v1', Pod: 'v1' } as const;

/** Lists through the unchanged Kubernetes client against the region's simulator. */
async function simObjects(region: string, kind: keyof typeof apiVersions, deploymentId: string): Promise<any[]> {
  const api = new KubeClient(stack.regions.get(region)!.sim.sim.kubeConfig());
  return (await api.list(apiVersions[kind], kind, WORKLOAD_NAMESPACE, `unkey.com/deployment.id=${deploymentId}`)).items;
}

test('deploy to two regions becomes ready; both clusters hold the StatefulSet and headless Service; instances match pods', async () => {
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 2 } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.id;
  const ready = await waitStatus(id, ['ready', 'failed']);
  assert.equal(ready.status, 'ready', ready.error);
  for (const region of ['us-east-1', 'eu-west-1']) {
    const [sts] = await simObjects(region, 'StatefulSet', id);
    assert.ok(sts, `StatefulSet in ${region}`);
    assert.equal(sts.metadata.labels['app.kubernetes.io/managed-by'], 'krane');
    assert.equal(sts.metadata.labels['app.kubernetes.io/component'], 'deployment');
    assert.equal(sts.metadata.labels['unkey.com/environment.id'], 'default');
    const [svc] = await simObjects(region, 'Service', id);
    assert.equal(svc.spec.clusterIP, 'None');
    assert.equal(svc.spec.publishNotReadyAddresses, true);
    const pods = (await simObjects(region, 'Pod', id)).map((p: any) => p.metadata.name).sort();
    const rows = ready.instances.filter((i: any) => i.region === region).map((i: any) => i.podName).sort();
    assert.deepEqual(rows, pods);
    assert.equal(pods.length, 2);
  }
  assert.ok(ready.domains.some((d: any) => d.kind === 'deployment'));
  assert.ok(ready.steps.length > 5, 'the step history is the deploy journal: ' + JSON.stringify(ready.invocations));
});

test('a crash-looping image fails the deploy on the crash report (not the deadline), with the reason; topologies stop and the cluster is cleaned', async () => {
  const created = await stack.api('/v1/deployments', { body: { image: 'registry.local/app:crash-1', regions: ['us-east-1', 'eu-west-1'], replicas: 1 } });
  assert.equal(created.status, 202);
  const id = created.body.id;
  // The first crash is reported by krane; the deploy must fail on it, long before its timeout.
  // (Not awaited as a failed instance row: krane deletes the pods at once, so on a slow
  // machine the poll can miss the moment those rows exist; the reason below is the evidence.)
  const failed = await waitStatus(id, ['failed', 'ready'], 30_000);
  assert.equal(failed.status, 'failed');
  // Evidence that the crash report, not the deadline, failed it: the reason is the crash, and
  // the deploy invocation ended long before its timeout could fire (no timeout in the error).
  assert.match(failed.error, /CrashLoopBackOff/);
  assert.doesNotMatch(failed.error, /timed out|timeout/i);
  assertEvery(failed.topology, (t: any) => t.desiredStatus === 'stopped');
  for (const region of ['us-east-1', 'eu-west-1']) {
    await until(async () => (await simObjects(region, 'StatefulSet', id)).length === 0, 10_000, `StatefulSet removed from ${region}`);
    await until(async () => (await simObjects(region, 'Service', id)).length === 0, 10_000, `Service removed from ${region}`);
  }
  // krane reports the pods gone, and only that removes their rows.
  const rows = async () => (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM instances WHERE deployment_id = ${id}`)[0]!.n;
  await until(async () => (await rows()) === 0, 10_000, 'instance rows removed');
});

test('stop deletes the workloads, start recreates them, rollback makes a new deployment from the old config', async () => {
  const spec = { image: 'nginx:1.26', regions: ['us-east-1'], replicas: 1, port: 9000, env: { MODE: 'blue' }, command: ['nginx'] };
  const created = await stack.api('/v1/deployments', { body: spec });
  const id = created.body.id;
  assert.equal((await waitStatus(id, ['ready', 'failed'])).status, 'ready');

  const stop = await stack.api(`/v1/deployments/${id}/stop`, { method: 'POST' });
  assert.equal(stop.status, 200, JSON.stringify(stop.body));
  await until(async () => (await simObjects('us-east-1', 'StatefulSet', id)).length === 0, 10_000, 'StatefulSet deleted');
  assert.equal((await waitStatus(id, ['stopped'])).desiredState, 'stopped');

  const start = await stack.api(`/v1/deployments/${id}/start`, { method: 'POST' });
  assert.equal(start.status, 200);
  await until(async () => (await simObjects('us-east-1', 'StatefulSet', id)).length === 1, 10_000, 'StatefulSet recreated');
  assert.equal((await waitStatus(id, ['ready', 'failed'])).status, 'ready');

  const rb = await stack.api(`/v1/deployments/${id}/rollback`, { method: 'POST' });
  assert.equal(rb.status, 202);
  assert.notEqual(rb.body.id, id);
  const copy = await waitStatus(rb.body.id, ['ready', 'failed']);
  assert.equal(copy.status, 'ready');
  assert.equal(copy.rolledBackFrom, id);
  // The copy runs what was asked for the original (not just whatever the original now holds).
  // Views show only the env's keys (values may be secrets), so the values are read from the row.
  const { env, ...shown } = spec;
  for (const [k, v] of Object.entries(shown)) assert.deepEqual(copy[k], v, `rollback keeps the requested ${k}`);
  assert.deepEqual(copy.envKeys, Object.keys(env));
  const [row] = await stack.db.sql<{ env: Record<string, string> }[]>`SELECT env FROM deployments WHERE id = ${rb.body.id}`;
  assert.deepEqual(row!.env, env, 'rollback keeps the requested env values');
  const orig = (await stack.api(`/v1/deployments/${id}`)).body;
  for (const k of ['image', 'regions', 'replicas', 'port', 'envKeys', 'command', 'cpuMillicores', 'memoryMib', 'environmentId']) {
    assert.deepEqual(copy[k], orig[k], `rollback keeps ${k}`);
  }

  const promote = await stack.api(`/v1/deployments/${id}/promote`, { method: 'POST' });
  assert.equal(promote.status, 200, JSON.stringify(promote.body));
  assert.ok(promote.body.hostnames.some((h: string) => h.startsWith('default-default.')), 'the environment domain points here again');
});

test('bad input: 400 naming each field, nothing written', async () => {
  const [before] = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployments`;
  const bad = await stack.api('/v1/deployments', { body: { image: 'nginx', buildContext: '/tmp', regions: ['Not A Region'], replicas: 0, port: 70000, env: { '1BAD': 'x' }, extra: true } });
  assert.equal(bad.status, 400);
  const fields = bad.body.error.details.map((d: any) => d.field).sort();
  for (const f of ['regions.0', 'replicas', 'port', 'env.1BAD', 'extra']) assert.ok(fields.includes(f), `${f} named in ${JSON.stringify(fields)}`);
  const both = await stack.api('/v1/deployments', { body: { image: 'nginx', buildContext: '/tmp', regions: ['us-east-1'] } });
  assert.equal(both.status, 400);
  assert.match(JSON.stringify(both.body.error.details), /exactly one of image or buildContext/);
  const unknownEnv = await stack.api('/v1/deployments', { body: { image: 'nginx', regions: ['us-east-1'], environmentId: 'nope' } });
  assert.equal(unknownEnv.status, 400);
  assert.equal(unknownEnv.body.error.details[0].field, 'environmentId');
  const notJson = await fetch(`${stack.ctrl.url}/v1/deployments`, { method: 'POST', headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' }, body: '{' });
  assert.equal(notJson.status, 400);
  const [after] = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployments`;
  assert.equal(after!.n, before!.n);
  assert.equal((await stack.api('/v1/deployments', { body: {}, token: null })).status, 401);
  assert.equal((await stack.api('/v1/deployments', { body: {}, token: 'wrong-token-wrong-token' })).status, 401);
  assert.equal((await stack.api('/v1/deployments/dep-nothere')).status, 404);
  // A NUL byte would reach PostgreSQL and fail there (22021): refused up front instead.
  assert.equal((await stack.api('/v1/deployments/a%00b')).status, 400);
  assert.equal((await stack.api('/v1/deployments?environmentId=a%00b')).status, 400);
  const nul = await stack.api('/v1/deployments', { body: { image: 'nginx', regions: ['us-east-1'], env: { A: 'x\u0000y' }, command: ['a\u0000'] } });
  assert.equal(nul.status, 400);
  assert.deepEqual(nul.body.error.details.map((d: any) => d.field).sort(), ['command.0', 'env.A']);
});
