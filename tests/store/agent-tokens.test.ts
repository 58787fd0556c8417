// Agent token lifecycle in the store and the operator commands on it (`ctrl tokens ls|revoke`,
// `ctrl feed rotate-epoch`), run from the bundle as an operator runs them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { runBundle } from '../helpers/bundle';
import * as tokens from '../../src/store/agent-tokens';
import { getFeedEpoch } from '../../src/store/system';
import { load } from 'js-yaml';

const db = await testDb();

test('a configured token that was revoked stays revoked when ctrl registers it again', async () => {
  const token = 'configured-token-0123456789';
  const first = await tokens.ensureAgentToken(db.sql, 'us-east-1', token);
  assert.equal(first.revoked, false);
  assert.equal(await tokens.revokeAgentToken(db.sql, first.id), true);
  const again = await tokens.ensureAgentToken(db.sql, 'us-east-1', token);
  assert.deepEqual(again, { id: first.id, region: 'us-east-1', revoked: true });
  assert.equal(await tokens.regionForToken(db.sql, token), undefined);
  assert.equal(await tokens.revokeAgentToken(db.sql, first.id), false, 'revoking twice changes nothing');
});

test('listing shows ids, regions and dates, never a token or its hash', async () => {
  const { id, token } = await tokens.createAgentToken(db.sql, 'eu-west-1');
  const list = await tokens.listAgentTokens(db.sql);
  const row = list.find((t) => t.id === id)!;
  assert.equal(row.region, 'eu-west-1');
  assert.ok(row.createdAt instanceof Date);
  assert.equal(row.revokedAt, null);
  assert.deepEqual(Object.keys(row).sort(), ['createdAt', 'id', 'region', 'revokedAt']);
  assert.ok(!JSON.stringify(list).includes(token) && !JSON.stringify(list).includes(tokens.hashToken(token)));
});

test('ctrl tokens ls and ctrl tokens revoke ID, from the bundle', async () => {
  const { id, token } = await tokens.createAgentToken(db.sql, 'ap-south-1');
  const ls = await runBundle(['ctrl', 'tokens', 'ls', '--database-url', db.url]);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, new RegExp(`${id}\\s+ap-south-1\\s`));
  assert.ok(!ls.stdout.includes(token));
  const json = await runBundle(['ctrl', 'tokens', 'ls', '--json', '--database-url', db.url]);
  assert.equal(json.code, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as { id: string; revokedAt: string | null }[];
  assert.equal(parsed.find((t) => t.id === id)!.revokedAt, null);
  const yaml = await runBundle(['ctrl', 'tokens', 'ls', '-o', 'yaml', '--database-url', db.url]);
  assert.deepEqual(load(yaml.stdout), parsed, '-o yaml is the same list');
  const bad = await runBundle(['ctrl', 'tokens', 'ls', '-o', 'xml', '--database-url', db.url]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /-o must be one of table, wide, json, yaml/);

  const revoke = await runBundle(['ctrl', 'tokens', 'revoke', id, '--database-url', db.url]);
  assert.equal(revoke.code, 0, revoke.stderr);
  assert.equal(await tokens.regionForToken(db.sql, token), undefined);
  const again = await runBundle(['ctrl', 'tokens', 'revoke', id, '--database-url', db.url]);
  assert.equal(again.code, 0, 'revoking a revoked token is not an error');
  assert.match(again.stderr, /already revoked/);
  const unknown = await runBundle(['ctrl', 'tokens', 'revoke', 'tok-nope', '--database-url', db.url]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /tok-nope/);
  const after = await runBundle(['ctrl', 'tokens', 'ls', '--database-url', db.url]);
  assert.match(after.stdout, new RegExp(`${id}\\s+ap-south-1\\s+\\S+\\s+\\S+`), 'the revocation date is listed');
});

test('ctrl feed rotate-epoch starts a new feed epoch', async () => {
  const before = await getFeedEpoch(db.sql);
  const r = await runBundle(['ctrl', 'feed', 'rotate-epoch', '--database-url', db.url]);
  assert.equal(r.code, 0, r.stderr);
  const now = await getFeedEpoch(db.sql);
  assert.notEqual(now, before);
  assert.match(r.stdout, new RegExp(now));
});
