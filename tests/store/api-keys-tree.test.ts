// The key tree (issue 32): revoking a key revokes every key below it, and sql/0021 brought keys
// made before the rule under it (descendants of revoked keys revoked, expiries capped at their
// ancestors'). The migration's data step is run again here on rows made to need it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { testDb } from '../helpers/db';
import { apiKeys } from '../../src/store';

const { sql } = await testDb();
const key = (id: string, createdBy: string, over: { expires?: string | null; revoked?: boolean } = {}) =>
  sql`INSERT INTO api_keys (id, name, key_hash, workspace_id, permissions, expires_at, created_by, revoked_at)
      VALUES (${id}, ${id}, ${`hash-${id}`}, 'default', '{deployments.read}', ${over.expires ?? null}, ${createdBy}, ${over.revoked ? new Date() : null})`;

test('revokeKey takes the whole subtree, and only it', async () => {
  await key('key-r', 'admin');
  await key('key-r1', 'key-r');
  await key('key-r11', 'key-r1');
  await key('key-r2', 'key-r', { revoked: true });
  await key('key-other', 'admin');
  const r = await apiKeys.revokeKey(sql, 'key-r');
  assert.equal(r.revoked, true);
  assert.deepEqual(r.descendants.sort(), ['key-r1', 'key-r11']);
  assert.equal((await apiKeys.getKey(sql, 'key-other'))!.revokedAt, null);
  assert.deepEqual(await apiKeys.revokeKey(sql, 'key-r'), { revoked: false, descendants: [] });
});

test("sql/0021's data step: descendants of revoked keys are revoked, expiries capped at the ancestors'", async () => {
  const soon = new Date(Date.now() + 3_600_000).toISOString();
  await key('key-m', 'admin', { revoked: true });
  await key('key-m1', 'key-m');
  await key('key-m11', 'key-m1');
  await key('key-e', 'admin', { expires: soon });
  await key('key-e1', 'key-e');
  await key('key-e11', 'key-e1', { expires: new Date(Date.now() + 7_200_000).toISOString() });
  const text = readFileSync(new URL('../../sql/0021_key_tree.sql', import.meta.url), 'utf8').replace(/^CREATE INDEX.*$/m, '');
  await sql.begin((tx) => tx.unsafe(text));
  for (const id of ['key-m1', 'key-m11']) assert.ok((await apiKeys.getKey(sql, id))!.revokedAt, `${id} revoked`);
  for (const id of ['key-e1', 'key-e11']) assert.equal((await apiKeys.getKey(sql, id))!.expiresAt?.getTime(), new Date(soon).getTime(), id);
  assert.equal((await apiKeys.getKey(sql, 'key-e'))!.revokedAt, null);
});
