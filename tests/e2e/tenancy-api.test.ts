// Tenancy through the API (issue 26): workspaces, projects and environments are created, read,
// listed and deleted over HTTP. Deleting refuses (409) while anything runs, and otherwise removes
// what the environment runs in the clusters through the outbox: its sentinel and gossip-policy
// rows go with change rows, and the cluster API answers their desired state with 404 (krane's
// cue to delete). Deleting a workspace revokes its keys. The `default` ones stay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { changes, cilium, deployments, sentinels, tenancy } from '../../src/store';
import { testCtrl } from '../http/helpers';
import { insertDeploymentOf, makeKey, makeTenant } from './tenancy-helpers';

const t = await testCtrl();

test('create, read and list workspaces, projects and environments; an environment has a slug, regions and a hostname', async () => {
  const A = await makeTenant(t, 'a');
  assert.equal((await t.api(`/v1/workspaces/${A.workspaceId}`)).body.name, 'tenant a');
  const env = await t.api(`/v1/environments/${A.environmentId}`);
  assert.equal(env.status, 200, env.text);
  assert.equal(env.body.slug, 'production');
  assert.deepEqual(env.body.regions, ['us-east-1']);
  assert.match(env.body.hostname, /-production\.unkey\.local$/);
  const custom = await t.api(`/v1/projects/${A.projectId}/environments`, { body: { slug: 'staging', hostname: 'staging.example.com' } });
  assert.equal(custom.status, 201, custom.text);
  assert.equal(custom.body.hostname, 'staging.example.com');
  assert.match(custom.body.id, /^env-/);
  const list = await t.api(`/v1/projects/${A.projectId}/environments`);
  assert.deepEqual(list.body.environments.map((e: any) => e.slug), ['production', 'staging']);
  assert.deepEqual((await t.api(`/v1/workspaces/${A.workspaceId}/projects`)).body.projects.map((p: any) => p.id), [A.projectId]);
  assert.ok((await t.api('/v1/workspaces')).body.workspaces.some((w: any) => w.id === 'default'), 'the default workspace stays listed');
  // Traffic reads the environment's own hostname.
  assert.equal((await t.api(`/v1/environments/${custom.body.id}/traffic`)).body.hostname, 'staging.example.com');
});

test('bad input is a 400 naming the field; a taken id, slug or hostname is a 409; nothing is written', async () => {
  const before = (await t.db.sql`SELECT count(*)::int AS n FROM environments`)[0]!.n;
  const cases: [string, unknown, string][] = [
    ['/v1/workspaces', { name: '' }, 'name'],
    ['/v1/workspaces', { name: 'x', id: 'Not_A_Slug' }, 'id'],
    ['/v1/workspaces', { name: 'x', extra: 1 }, 'extra'],
    ['/v1/projects/default/environments', { slug: 'ok', regions: ['nowhere-1'] }, 'regions.0'],
    ['/v1/projects/default/environments', { slug: 'ok', hostname: 'NOT A HOST' }, 'hostname'],
    ['/v1/projects/default/environments', { slug: 'ok', regions: ['us-east-1', 'us-east-1'] }, 'regions'],
  ];
  for (const [path, body, field] of cases) {
    const r = await t.api(path, { body });
    assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.error.details[0].field, field, r.text);
  }
  assert.equal((await t.api('/v1/workspaces', { body: { id: 'default', name: 'again' } })).status, 409);
  assert.equal((await t.api('/v1/projects/default/environments', { body: { slug: 'default' } })).status, 409);
  assert.equal((await t.api('/v1/projects/default/environments', { body: { slug: 'other', hostname: 'staging.example.com' } })).status, 409);
  assert.equal((await t.db.sql`SELECT count(*)::int AS n FROM environments`)[0]!.n, before);
});

test('deleting an environment refuses while a deployment runs, then removes its sentinels, policies and routes through the outbox', async () => {
  const C = await makeTenant(t, 'c');
  await insertDeploymentOf(t, C, 'dep-of-c');
  const appId = (await tenancy.projectApp(t.db.sql, C.projectId))!;
  const scope = { workspaceId: C.workspaceId, projectId: C.projectId, appId, environmentId: C.environmentId };
  await sentinels.ensureSentinel(t.db.sql, { ...scope, id: 'snt-of-c', region: 'us-east-1', image: 'sentinel:1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
  await cilium.ensureCiliumPolicy(t.db.sql, { ...scope, id: 'cnp-of-c', region: 'us-east-1' });

  const busy = await t.api(`/v1/environments/${C.environmentId}`, { method: 'DELETE' });
  assert.equal(busy.status, 409, busy.text);
  assert.equal(busy.body.error.code, 'ERR_TENANCY_BUSY');
  assert.match(busy.body.error.message, /dep-of-c/);
  assert.ok(await sentinels.getSentinel(t.db.sql, 'snt-of-c'), 'nothing removed by the refusal');

  await deployments.setDeploymentStatus(t.db.sql, 'dep-of-c', 'failed', 'test');
  const gone = await t.api(`/v1/environments/${C.environmentId}`, { method: 'DELETE' });
  assert.equal(gone.status, 200, gone.text);
  assert.deepEqual(gone.body.removed, { environments: 1, sentinels: 1, policies: 1, keys: 0 });
  assert.equal(await sentinels.getSentinel(t.db.sql, 'snt-of-c'), undefined);
  assert.equal(await cilium.getCiliumPolicy(t.db.sql, 'cnp-of-c'), undefined);
  // Each removal has its change row after the creation's, so the feed tells krane to delete.
  assert.equal((await changes.listChangesFor(t.db.sql, 'sentinel', 'snt-of-c')).length, 2);
  assert.equal((await changes.listChangesFor(t.db.sql, 'cilium_network_policy', 'cnp-of-c')).length, 2);
  const desired = await t.api('/v1/cluster/sentinels/snt-of-c/desired', { token: t.agentToken });
  assert.equal(desired.status, 404, desired.text);
  assert.equal((await t.api(`/v1/environments/${C.environmentId}`)).status, 404);
  assert.deepEqual((await t.api(`/v1/projects/${C.projectId}/environments`)).body.environments, []);
  // The slug is free again.
  assert.equal((await t.api(`/v1/projects/${C.projectId}/environments`, { body: { slug: 'production' } })).status, 201);
});

test('deleting a workspace revokes its keys; the default workspace and environment stay', async () => {
  const D = await makeTenant(t, 'd');
  const k = await makeKey(t, { workspaceId: D.workspaceId }, ['deployments.read']);
  assert.equal((await t.api(`/v1/environments/${D.environmentId}`, { token: k.key })).status, 200);
  const r = await t.api(`/v1/workspaces/${D.workspaceId}`, { method: 'DELETE' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.removed.keys, 1);
  assert.equal((await t.api(`/v1/environments/${D.environmentId}`, { token: k.key })).status, 401);
  assert.equal((await t.api(`/v1/workspaces/${D.workspaceId}`)).status, 404);
  assert.equal((await t.api('/v1/workspaces/default', { method: 'DELETE' })).status, 409);
  assert.equal((await t.api('/v1/environments/default', { method: 'DELETE' })).status, 409);
});
