// Two tenants on one ctrl, for the tenancy tests: workspaces A and B, each with a project and an
// environment made through the API, and keys minted through the API.
import assert from 'node:assert/strict';
import type { TestCtrl } from '../http/helpers';
import { deployments, tenancy } from '../../src/store';

export interface Tenant {
  workspaceId: string;
  projectId: string;
  environmentId: string;
}

export async function makeTenant(t: TestCtrl, name: string): Promise<Tenant> {
  const ws = await t.api('/v1/workspaces', { body: { id: `ws-${name}`, name: `tenant ${name}` } });
  assert.equal(ws.status, 201, ws.text);
  const prj = await t.api(`/v1/workspaces/ws-${name}/projects`, { body: { id: `prj-${name}`, name: 'api' } });
  assert.equal(prj.status, 201, prj.text);
  const env = await t.api(`/v1/projects/prj-${name}/environments`, { body: { id: `env-${name}`, slug: 'production', regions: ['us-east-1'] } });
  assert.equal(env.status, 201, env.text);
  return { workspaceId: `ws-${name}`, projectId: `prj-${name}`, environmentId: `env-${name}` };
}

export async function makeKey(t: TestCtrl, scope: Partial<Tenant> & { workspaceId: string }, permissions: string[], token?: string): Promise<{ id: string; key: string }> {
  const r = await t.api('/v1/keys', { body: { name: `key ${permissions.length} permissions`, scope, permissions }, ...(token ? { token } : {}) });
  assert.equal(r.status, 201, r.text);
  assert.match(r.body.key, /^uik_/);
  return { id: r.body.id, key: r.body.key };
}

/** A deployment row of a tenant written straight to the store (no workflow): for reads. */
export async function insertDeploymentOf(t: TestCtrl, tenant: Tenant, id: string): Promise<void> {
  const appId = (await tenancy.projectApp(t.db.sql, tenant.projectId))!;
  await deployments.insertDeployment(t.db.sql, {
    id, workspaceId: tenant.workspaceId, projectId: tenant.projectId, appId, environmentId: tenant.environmentId,
    image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1'],
  });
}

export const ALL_PERMISSIONS = [
  'deployments.read', 'deployments.write', 'environments.write', 'traffic.write', 'sentinels.write', 'rollouts.write',
  'regions.read', 'invocations.read', 'invocations.write', 'audit.read', 'keys.write',
];
