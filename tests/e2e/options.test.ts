// Claims of the README and API.md about ctrl's options and the deployment API, each shown on
// the in-process system: --deploy-timeout's timeout path, --sentinel-image, --apex-domain,
// pullfail and oom failing a deploy, the 409 refusals (promote a deployment that is not ready,
// start a failed one, roll back one that never had an image) and the ?environmentId= filter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testStack, until } from '../helpers/stack';
import { newId } from '../../src/ids';
import { tenancy } from '../../src/store';

// Build contexts must lie under --build-root (required with --build-command).
const buildRoot = mkdtempSync(join(tmpdir(), 'unkey-options-'));
const stack = await testStack({
  regions: ['us-east-1'],
  ctrl: { settings: { buildRoot, sentinelImage: 'registry.local/sentinel:custom', apexDomain: 'apps.example.test', buildCommand: 'echo "no such base image" >&2; exit 1' } },
});

async function deploy(body: Record<string, unknown>): Promise<string> {
  const r = await stack.api('/v1/deployments', { body: { regions: ['us-east-1'], replicas: 1, ...body } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id as string;
}
const settled = (id: string) =>
  until(async () => {
    const d = (await stack.api(`/v1/deployments/${id}`)).body;
    return ['ready', 'failed'].includes(d.status) ? d : undefined;
  }, 30_000, `deployment ${id} settled`);

let readyOne: Promise<any> | undefined;
const ready = () => (readyOne ??= deploy({ image: 'nginx:1.27' }).then(settled));

test('--deploy-timeout: instances that never come fail the deploy with the timeout reason', async () => {
  const own = await testStack({ regions: ['us-east-1'], ctrl: { settings: { deployTimeout: '3s' } } });
  const post = async () => {
    const r = await own.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.id as string;
  };
  // A first deploy makes the environment's sentinel; once it is healthy, krane stops, so the
  // next deploy's sentinel is unchanged (READY without krane) and its pods are never created:
  // only the deploy timeout can end it, however slow the machine.
  await post();
  await until(async () => (await own.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE health = 'healthy'`)[0]!.n === 1, 30_000, 'the sentinel healthy');
  await own.stopKrane('us-east-1');
  const id = await post();
  const d = await until(async () => {
    const x = (await own.api(`/v1/deployments/${id}`)).body;
    return ['ready', 'failed'].includes(x.status) ? x : undefined;
  }, 60_000, 'the deploy ended');
  assert.equal(d.status, 'failed');
  assert.match(d.error, /timed out waiting for instances/);
});

test('--sentinel-image names the image of new sentinels; --apex-domain is the parent of generated hostnames', async () => {
  const d = await ready();
  assert.equal(d.status, 'ready', d.error);
  assert.ok(d.domains.length > 0);
  for (const dom of d.domains) assert.match(dom.hostname, /\.apps\.example\.test$/, JSON.stringify(d.domains));
  const sentinels = (await stack.api('/v1/sentinels')).body.sentinels as { image: string; environmentId: string }[];
  assert.ok(sentinels.length > 0);
  assert.deepEqual([...new Set(sentinels.map((s) => s.image))], ['registry.local/sentinel:custom']);
});

for (const [fault, reason] of [
  ['pullfail', /ImagePullBackOff|ErrImagePull/],
  ['oom', /OOMKilled/],
] as const) {
  test(`an image that ${fault === 'oom' ? 'runs out of memory' : 'cannot be pulled'} (${fault}) fails the deploy with the reason`, async () => {
    const d = await settled(await deploy({ image: `registry.local/app:${fault}-1` }));
    assert.equal(d.status, 'failed');
    assert.match(d.error, reason);
    assert.doesNotMatch(d.error, /timed out/);
  });
}

test('409s: promote a deployment that is not ready, start a failed one, roll back one that never had an image', async () => {
  const failed = await settled(await deploy({ image: 'registry.local/app:crash-1' }));
  assert.equal(failed.status, 'failed');
  const promote = await stack.api(`/v1/deployments/${failed.id}/promote`, { method: 'POST' });
  assert.equal(promote.status, 409, JSON.stringify(promote.body));
  assert.equal(promote.body.error.code, 'ERR_DEPLOYMENT_NOT_READY');
  const start = await stack.api(`/v1/deployments/${failed.id}/start`, { method: 'POST' });
  assert.equal(start.status, 409, JSON.stringify(start.body));
  assert.equal(start.body.error.code, 'ERR_DEPLOYMENT_STATE_CONFLICT');

  const ctx = mkdtempSync(join(buildRoot, 'app-'));
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM scratch\n');
  const unbuilt = await settled(await deploy({ buildContext: ctx }));
  assert.equal(unbuilt.status, 'failed');
  assert.equal(unbuilt.image, null);
  const rollback = await stack.api(`/v1/deployments/${unbuilt.id}/rollback`, { method: 'POST' });
  assert.equal(rollback.status, 409, JSON.stringify(rollback.body));
  assert.equal(rollback.body.error.code, 'ERR_DEPLOYMENT_NO_IMAGE');
});

test('GET /v1/deployments?environmentId= lists only that environment; without it, the default one', async () => {
  const environmentId = newId('env');
  await tenancy.insertEnvironment(stack.db.sql, { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId, slug: 'staging' });
  const other = await deploy({ image: 'nginx:1.27', environmentId });
  const mine = (await ready()).id;
  const only = (await stack.api(`/v1/deployments?environmentId=${environmentId}`)).body.deployments as { id: string }[];
  assert.deepEqual(only.map((d) => d.id), [other]);
  const dflt = (await stack.api('/v1/deployments?environmentId=default')).body.deployments as { id: string; environmentId: string }[];
  assert.ok(dflt.some((d) => d.id === mine));
  assertEvery(dflt, (d) => d.environmentId === 'default');
  // No filter means the default environment, as for creates.
  const none = (await stack.api('/v1/deployments')).body.deployments as { id: string }[];
  assert.deepEqual(none.map((d) => d.id), dflt.map((d) => d.id));
});
