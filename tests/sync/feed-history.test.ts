// The feed epoch follows the database's history (sql/0030_feed_history.sql): a history other
// than the one the epoch was issued in (what a promoted standby or a restore looks like to
// ctrl) renews the epoch before any row of it is handed out. tests/ha/lossy-failover.test.ts
// shows the same on a real failover; here the history is changed by hand, so the order is exact.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { fenceFeed, getFeedEpoch } from '../../src/store/system';
import { tailSettled } from '../../src/store/changes';
import { Watcher } from '../../src/sync/watcher';
import { RecordingController, TOKENS, deployTo, readFeed, silent, startFeedServer, waitFor } from './helpers';

const db = await testDb({ isolated: true });

/** What the row says after a failover: the history of the primary it was written on. */
const otherHistory = () => db.sql`UPDATE system_state SET feed_history = 'another-cluster/00000007'`;

test('fenceFeed renews the epoch only when the history changed, and the tail query says which', async () => {
  const epoch = await getFeedEpoch(db.sql);
  assert.equal(await fenceFeed(db.sql), false, 'the migration recorded this history');
  assert.equal((await tailSettled(db.sql, { txid: '0', id: '0' }, 10)).fenced, true);
  assert.equal(await getFeedEpoch(db.sql), epoch);

  await otherHistory();
  assert.equal((await tailSettled(db.sql, { txid: '0', id: '0' }, 10)).fenced, false);
  assert.equal(await fenceFeed(db.sql), true);
  assert.notEqual(await getFeedEpoch(db.sql), epoch);
  assert.equal((await tailSettled(db.sql, { txid: '0', id: '0' }, 10)).fenced, true);
  assert.equal(await fenceFeed(db.sql), false);
});

test('a changed history makes every cursor handed out before it 410, and the agent full-syncs into the new epoch', async () => {
  const server = await startFeedServer(db.url, { waitLimitMs: 1_500, heartbeatMs: 300 });
  after(() => server.close());
  const ctrl = new RecordingController();
  const w = new Watcher({ controlPlaneUrl: server.url, token: TOKENS['us-east-1'], region: 'us-east-1', controller: ctrl, logger: silent, backoffMinMs: 20, backoffMaxMs: 40, waitSeconds: 0.3 });
  w.start();
  try {
    await deployTo(db.sql, 'us-east-1');
    await waitFor(() => w.stats.snapshotsCompleted === 1 && ctrl.calls.length > 0, 10_000, 'first snapshot');
    const old = w.cursor!;
    await otherHistory();
    await waitFor(async () => (await readFeed(server.url, TOKENS['us-east-1'], { cursor: old, wait: '0.1' })).status === 410, 10_000, '410 for the old history');
    await waitFor(() => w.stats.snapshotsCompleted >= 2, 10_000, 'full sync after 410');
    assert.ok(w.stats.resets >= 1);
    assert.notEqual(w.cursor!.split(':')[0], old.split(':')[0], 'the new cursor is of the renewed epoch');
    // The renewed epoch carries on: a change written now reaches the agent incrementally.
    const before = ctrl.calls.length;
    await deployTo(db.sql, 'us-east-1');
    await waitFor(() => ctrl.calls.length > before, 10_000, 'a change after the renewal');
  } finally {
    await w.stop();
  }
});
