// krane's read-ahead bound: while its handlers are held, the watcher stops reading the stream at
// maxBacklog events (the rest stays in the socket, where ctrl's write stall limit sees it),
// and everything is applied once they go on. Since the bound is awaited only when reached
// (watcher.ts), nothing else failed when it was missing.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { Watcher } from '../../src/sync/watcher';
import { RecordingController, TOKENS, deployTo, silent, startFeedServer, waitFor } from './helpers';

const db = await testDb();
const server = await startFeedServer(db.url, { waitLimitMs: 1_000, heartbeatMs: 200 });
after(() => server.close());

test('with its handlers held, the watcher reads no more than maxBacklog events ahead; all are applied after', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push(await deployTo(db.sql, 'us-east-1'));
  const ctrl = new RecordingController();
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  /** The watcher's backlog at every apply: what it had read ahead of its handlers by then. */
  const backlogs: number[] = [];
  const w = new Watcher({ controlPlaneUrl: server.url, token: TOKENS['us-east-1'], region: 'us-east-1', controller: ctrl, logger: silent, concurrency: 1, maxBacklog: 5, retries: 0 });
  // The gate is opened first: a failed assertion must not leave stop() waiting on held applies.
  after(async () => {
    open();
    await w.stop();
  });
  ctrl.hook = async () => {
    backlogs.push(w.backlog);
    await gate;
  };
  w.start();
  // The first apply is held, so nothing leaves the backlog: the reader fills it to the bound
  // and stops there (without the bound it read all 40 in the same pass).
  await waitFor(() => backlogs.length === 1 && w.backlog >= 5, { what: 'a held apply and a full backlog' });
  assert.equal(w.backlog, 5, 'read ahead of a held handler');
  open();
  await waitFor(() => w.stats.snapshotsCompleted === 1, { what: 'the full sync to complete' });
  assert.equal(ctrl.calls.length, 40);
  assert.deepEqual(new Set(ctrl.calls.map((c) => c.key.split('/').pop())), new Set(ids));
  assert.ok(Math.max(...backlogs) <= 5, `backlog at an apply went past the bound: ${Math.max(...backlogs)}`);
});
