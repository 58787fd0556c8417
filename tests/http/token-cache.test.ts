// AgentAuth's token cache (issue 26 item 7): least recently used entries go first, so a token
// in constant use stays cached while others come and go; a cached token costs no query.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { AgentAuth } from '../../src/http/auth';
import { createAgentToken } from '../../src/store/agent-tokens';
import { countingDb } from '../sync/helpers';

const db = await testDb();

test('the busiest token stays cached when the cache is full: eviction is least recently used, not first in', async () => {
  const counted = countingDb(db.url);
  after(() => counted.sql.end({ timeout: 1 }));
  const [a, b, c] = await Promise.all(['us-east-1', 'eu-west-1', 'ap-south-1'].map((r) => createAgentToken(db.sql, r)));
  const auth = new AgentAuth({ sql: counted.sql, cacheMaxEntries: 2 });
  after(() => auth.close());
  await auth.start();
  assert.equal((await auth.authenticate(a!.token))?.region, 'us-east-1');
  assert.equal((await auth.authenticate(b!.token))?.region, 'eu-west-1');
  assert.ok(await auth.authenticate(a!.token), 'a, used again, is the most recent');
  assert.ok(await auth.authenticate(c!.token), 'c takes the place of the least recently used (b)');
  const before = counted.count();
  assert.equal((await auth.authenticate(a!.token))?.region, 'us-east-1');
  assert.equal(counted.count(), before, 'the token in constant use was evicted (first-in eviction)');
  assert.ok(await auth.authenticate(b!.token));
  assert.ok(counted.count() > before, 'b was the one to go, so it is looked up again');
});
