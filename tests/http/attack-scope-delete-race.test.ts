// A key minted while its scope is being deleted outlived the deletion (noticed after issue 32's
// attack). Creating a key checks its scope before its transaction and then waits for the
// workspace's key lock; a workspace, project or environment deletion revoked the scope's keys
// without that lock, so a creation queued behind any holder inserted its key after the
// revocation had run: a live key of a deleted scope. docs/tenancy.md: deleting a scope revokes
// its keys.
//
// The orders are made, not waited for: the test holds the workspace's key lock (the advisory lock
// of apiKeys.lockWorkspaceKeys), queues the two requests on it in the order under test (each seen
// blocked by the test's own session before the next is sent), and releases it; PostgreSQL grants
// a released lock in queue order. Creation first: it is created, then revoked by the deletion.
// Deletion first: the creation, whose scope check before its transaction passed, re-checks under
// the lock and is refused (400 naming the scope). Either way no live key of the scope remains.
// Before the fix, both orders failed: the deletion did not queue at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/wait';
import { testCtrl } from './helpers';
import { makeTenant, type Tenant } from '../e2e/tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const sql = t.db.sql;

/** Holds the workspace's key lock from a session of the test's own; `blocked` counts the
 *  sessions waiting on that session, and on nothing else (ctrl's background work may wait too). */
async function holdKeyLock(workspaceId: string) {
  const held = await sql.reserve();
  const [{ pid }] = (await held`SELECT pg_backend_pid() AS pid`) as unknown as [{ pid: number }];
  await held`SELECT pg_advisory_lock(hashtext(${`api_keys:${workspaceId}`}))`;
  return {
    blocked: async () => (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${pid}::int = ANY(pg_blocking_pids(pid))`)[0]!.n,
    unlock: () => held`SELECT pg_advisory_unlock_all()`,
    release: async () => {
      await held`SELECT pg_advisory_unlock_all()`.catch(() => {});
      held.release();
    },
  };
}

interface Scope {
  name: string;
  scope: (a: Tenant) => Partial<Tenant>;
  path: (a: Tenant) => string;
  column: 'workspace_id' | 'project_id' | 'environment_id';
  id: (a: Tenant) => string;
}
const SCOPES: Scope[] = [
  { name: 'project', scope: (a) => ({ projectId: a.projectId }), path: (a) => `/v1/projects/${a.projectId}`, column: 'project_id', id: (a) => a.projectId },
  { name: 'workspace', scope: () => ({}), path: (a) => `/v1/workspaces/${a.workspaceId}`, column: 'workspace_id', id: (a) => a.workspaceId },
  { name: 'environment', scope: (a) => ({ projectId: a.projectId, environmentId: a.environmentId }), path: (a) => `/v1/environments/${a.environmentId}`, column: 'environment_id', id: (a) => a.environmentId },
];

async function race(s: Scope, first: 'creation' | 'deletion', tenant: string) {
  const a = await makeTenant(t, tenant);
  const { blocked, unlock, release } = await holdKeyLock(a.workspaceId);
  try {
    const create = () => t.api('/v1/keys', { body: { name: 'late', scope: { workspaceId: a.workspaceId, ...s.scope(a) }, permissions: ['deployments.read'] } });
    const remove = () => t.api(s.path(a), { method: 'DELETE' });
    const one = first === 'creation' ? create() : remove();
    await until(async () => (await blocked()) === 1, 10_000, `the ${first} waits for the key lock`);
    let answered = false;
    const two = (first === 'creation' ? remove() : create()).finally(() => (answered = true));
    await until(async () => answered || (await blocked()) === 2, 10_000, 'the second request answered or waits too');
    assert.equal(answered, false, 'the second request waited for the key lock');
    await unlock();
    const [minted, deleted] = first === 'creation' ? await Promise.all([one, two]) : (await Promise.all([two, one]));
    assert.equal(deleted.status, 200, deleted.text);
    if (first === 'creation') {
      assert.equal(minted.status, 201, minted.text);
      assert.ok(deleted.body.removed.keys >= 1, `the deletion revoked the new key: ${deleted.text}`);
    } else {
      assert.equal(minted.status, 400, minted.text);
      assert.equal(minted.body.error.code, 'ERR_VALIDATION_INVALID');
      assert.match(minted.body.error.details[0].field, /^scope\./);
    }
    const live = await sql<{ id: string }[]>`SELECT id FROM api_keys WHERE ${sql(s.column)} = ${s.id(a)} AND revoked_at IS NULL`;
    assert.deepEqual(live.map((r) => r.id), [], `live keys of the deleted ${s.name}`);
  } finally {
    await release();
  }
}

for (const s of SCOPES) {
  test(`a key created while its ${s.name} is being deleted, the creation queued first: created, then revoked with the rest`, () => race(s, 'creation', `${s.name[0]}c`));
  test(`a key created while its ${s.name} is being deleted, the deletion queued first: refused under the lock`, () => race(s, 'deletion', `${s.name[0]}d`));
}

// Two deletions of one workspace or project at once (the review of the fix): both read the row
// before the key lock, so the second, once it has the lock, must find it gone and answer 404, not
// delete again (a second audit row, deleted_at moved).
for (const s of SCOPES.slice(0, 2)) {
  test(`two deletions of one ${s.name} at once: one deletes, the other answers 404`, async () => {
    const a = await makeTenant(t, `${s.name[0]}2`);
    const { blocked, unlock, release } = await holdKeyLock(a.workspaceId);
    try {
      const both = [t.api(s.path(a), { method: 'DELETE' }), t.api(s.path(a), { method: 'DELETE' })];
      await until(async () => (await blocked()) === 2, 10_000, 'both deletions wait for the key lock');
      await unlock();
      const statuses = (await Promise.all(both)).map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 404]);
      const [audited] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM audit_log WHERE action = ${`${s.name}.delete`} AND target = ${s.id(a)} AND outcome = 'ok'`;
      assert.equal(audited!.n, 1, 'one deletion audited');
    } finally {
      await release();
    }
  });
}
