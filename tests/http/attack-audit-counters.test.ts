// Attack (after issue 32): the audit rows a key reads count everyone's calls. A row's `id` is the
// table's global bigserial and its `requestId` the replica's request counter (fastify's
// `req-<base 36>`), so the gap between two of A's own rows is the number of rows, and of
// requests, all tenants made meanwhile: B's activity, to the call, visible to any key of A's
// with audit.read (and `next`, the cursor, is the same number). The isolation rule (DESIGN.md
// section 14): nothing a tenant does changes what another tenant can observe. The model renames
// ids in creation order, so it cannot see this.
//
// Two runs on one ctrl: A1 makes two projects in a row; A2 makes one, B makes three, A2 makes
// another. What each A reads of its own two rows must not differ. Fails on main at 8edb159.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testCtrl } from './helpers';
import { makeKey, makeTenant, type Tenant } from '../e2e/tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const keyOf = async (x: Tenant) => (await makeKey(t, { workspaceId: x.workspaceId }, ['environments.write', 'audit.read'])).key;
const newProject = async (x: Tenant, key: string, name: string) => {
  const r = await t.api(`/v1/workspaces/${x.workspaceId}/projects`, { token: key, body: { name } });
  assert.equal(r.status, 201, r.text);
};
const counter = (requestId: string) => {
  const m = /^req-([0-9a-z]{1,8})$/.exec(requestId);
  return m ? parseInt(m[1]!, 36) : NaN;
};
/** What A can compute from its own two newest rows: the gaps between their ids and request ids. */
async function gaps(key: string): Promise<[number, number]> {
  const rows = (await t.api('/v1/audit?action=project.create&limit=2', { token: key })).body.entries as { id: string; requestId: string }[];
  assert.equal(rows.length, 2);
  return [Number(rows[0]!.id) - Number(rows[1]!.id), counter(rows[0]!.requestId) - counter(rows[1]!.requestId)];
}

test("the ids and request ids of a key's audit rows do not count another tenant's calls", async () => {
  const A1 = await makeTenant(t, 'a1');
  const A2 = await makeTenant(t, 'a2');
  const B = await makeTenant(t, 'b');
  const [a1, a2, b] = [await keyOf(A1), await keyOf(A2), await keyOf(B)];
  await newProject(A1, a1, 'one');
  await newProject(A1, a1, 'two');
  await newProject(A2, a2, 'one');
  for (const n of ['x', 'y', 'z']) await newProject(B, b, n);
  await newProject(A2, a2, 'two');
  const alone = await gaps(a1);
  const beside = await gaps(a2);
  assert.deepStrictEqual(beside, alone, `A's rows count B's: gaps ${JSON.stringify(beside)} beside B, ${JSON.stringify(alone)} alone`);
});
