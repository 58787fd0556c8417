// The harness's verdict on a waiting call answered 503 "database unavailable": the right
// answer when the call started nothing (ctrl checks a rollout's state before starting one),
// a violation when the workflow it starts was started meanwhile (the call lost track of it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { refusedBeforeStarting } from '../../bench/chaos/run';
import type { Call } from '../../bench/chaos/workload';

const db = await testDb();
const unavailable = { error: { code: 'ERR_DATABASE_UNAVAILABLE', message: 'the database is unavailable; retry shortly', details: [] } };

test('a 503 before anything started is a refusal; once the workflow was started in the call, it is not', async () => {
  const now = Date.now();
  const call: Call = { what: 'rollout-start', replica: 0, startedAt: now - 500, endedAt: now, status: 503, body: unavailable };
  assert.equal(await refusedBeforeStarting(db, call), true, 'nothing started');
  // Another handler of the service, or the same one long before, does not count.
  await db.sql`INSERT INTO engine_invocations (id, service, handler, object_key, kind, input, status, created_at)
    VALUES ('inv-aaaaaaaaaaaaaaaa', 'SentinelRolloutService', 'cancel', 'fleet', 'exclusive', '{}', 'completed', now()),
           ('inv-bbbbbbbbbbbbbbbb', 'SentinelRolloutService', 'rollout', 'fleet', 'exclusive', '{}', 'completed', now() - interval '1 hour')`;
  assert.equal(await refusedBeforeStarting(db, call), true);
  await db.sql`INSERT INTO engine_invocations (id, service, handler, object_key, kind, input, status, created_at)
    VALUES ('inv-cccccccccccccccc', 'SentinelRolloutService', 'rollout', 'fleet', 'exclusive', '{}', 'running', now())`;
  assert.equal(await refusedBeforeStarting(db, call), false, 'the rollout was started during the call');
  // Any other 5xx from a waiting call stays a violation.
  assert.equal(await refusedBeforeStarting(db, { ...call, what: 'rollout-resume', status: 500, body: { error: { code: 'ERR_INTERNAL' } } }), false);
});
