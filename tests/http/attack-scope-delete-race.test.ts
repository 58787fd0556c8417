// A key minted while its scope is being deleted outlived the deletion (noticed after issue 32's
// attack). Creating a key checks its scope before its transaction and then waits for the
// workspace's key lock; a workspace, project or environment deletion revoked the scope's keys
// without that lock, so a creation queued behind it (or behind any other holder) inserted its key
// after the revocation had run: a live key of a deleted scope. docs/tenancy.md: deleting a scope
// revokes its keys.
//
// The order is made, not waited for: the test holds the workspace's key lock (the advisory lock
// of apiKeys.lockWorkspaceKeys), the creation queues on it, the deletion is sent, and only then is
// the lock released. Whatever order the two then take, no live key of the deleted scope may stay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/wait';
import { testCtrl } from './helpers';
import { makeTenant, type Tenant } from '../e2e/tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const sql = t.db.sql;
const waiting = async () =>
  (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)[0]!.n;

async function raceDeletion(name: string, scopeOf: (a: Tenant) => Partial<Tenant>, path: (a: Tenant) => string, liveOf: (a: Tenant) => Promise<string[]>) {
  const a = await makeTenant(t, name);
  const held = await sql.reserve();
  await held`SELECT pg_advisory_lock(hashtext(${`api_keys:${a.workspaceId}`}))`;
  try {
    const minting = t.api('/v1/keys', { body: { name: 'late', scope: { workspaceId: a.workspaceId, ...scopeOf(a) }, permissions: ['deployments.read'] } });
    await until(async () => (await waiting()) >= 1, 10_000, 'the creation waits for the key lock');
    let deleted: { status: number; text: string } | undefined;
    const deleting = t.api(path(a), { method: 'DELETE' }).then((r) => (deleted = r));
    // Before the fix the deletion does not wait for the lock; after it, it queues behind the creation.
    await until(async () => deleted !== undefined || (await waiting()) >= 2, 10_000, 'the deletion answered or waits too');
    await held`SELECT pg_advisory_unlock_all()`;
    const [minted] = await Promise.all([minting, deleting]);
    assert.equal(deleted!.status, 200, deleted!.text);
    assert.ok(minted.status === 201 || minted.status === 422, `the creation answered ${minted.status}: ${minted.text}`);
    assert.deepEqual(await liveOf(a), [], `live keys of the deleted ${path(a)} (the creation answered ${minted.status})`);
  } finally {
    await held`SELECT pg_advisory_unlock_all()`.catch(() => {});
    held.release();
  }
}

test('a key created while its project is being deleted does not outlive the deletion', async () => {
  await raceDeletion('p', (a) => ({ projectId: a.projectId }), (a) => `/v1/projects/${a.projectId}`, async (a) =>
    (await sql<{ id: string }[]>`SELECT id FROM api_keys WHERE project_id = ${a.projectId} AND revoked_at IS NULL`).map((r) => r.id));
});

test('a key created while its workspace is being deleted does not outlive the deletion', async () => {
  await raceDeletion('w', () => ({}), (a) => `/v1/workspaces/${a.workspaceId}`, async (a) =>
    (await sql<{ id: string }[]>`SELECT id FROM api_keys WHERE workspace_id = ${a.workspaceId} AND revoked_at IS NULL`).map((r) => r.id));
});

test('a key created while its environment is being deleted does not outlive the deletion', async () => {
  await raceDeletion('e', (a) => ({ projectId: a.projectId, environmentId: a.environmentId }), (a) => `/v1/environments/${a.environmentId}`, async (a) =>
    (await sql<{ id: string }[]>`SELECT id FROM api_keys WHERE environment_id = ${a.environmentId} AND revoked_at IS NULL`).map((r) => r.id));
});
