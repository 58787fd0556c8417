// Two ctrl replicas serve one region's agents from one database, behind a round-robin balancer
// (issue 28, the small version of `bench:feed -- --replicas 2`): one replica dies mid-stream,
// its agents reconnect through the balancer to the other with their cursors, and every agent
// still sees every change, those before the kill and those after.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { balancer } from '../helpers/balancer';
import { Watcher } from '../../src/sync/watcher';
import { RecordingController, TOKENS, deployTo, silent, startFeedServer, waitFor } from './helpers';

const AGENTS = 6;

const db = await testDb();

test('a replica killed mid-stream: its agents reconnect to the other and miss no change', async () => {
  // Simulated agents share one token; its stream limit (one region's krane replicas) is lifted.
  const replicas = [await startFeedServer(db.url, { maxStreamsPerToken: 100 }), await startFeedServer(db.url, { maxStreamsPerToken: 100 })];
  const alive = [true, true];
  after(() => Promise.all(replicas.map((r, i) => (alive[i] ? r.close() : undefined))));
  const lb = await balancer(() => replicas.filter((_, i) => alive[i]).map((r) => Number(new URL(r.url).port)));
  after(() => lb.close());
  const agents = Array.from({ length: AGENTS }, () => {
    const controller = new RecordingController();
    const watcher = new Watcher({ controlPlaneUrl: lb.url, token: TOKENS['us-east-1'], region: 'us-east-1', controller, logger: silent, backoffMinMs: 20, backoffMaxMs: 100 });
    watcher.start();
    after(() => watcher.stop());
    return { controller, watcher };
  });
  await waitFor(() => agents.every((a) => a.watcher.stats.snapshotsCompleted >= 1), 10_000, 'every agent synced');
  const seesAll = (ids: string[]) => agents.every((a) => ids.every((id) => a.controller.applied(`deployment_topology/${id}`) !== undefined));
  const before: string[] = [];
  for (let i = 0; i < 5; i++) before.push(await deployTo(db.sql, 'us-east-1'));
  await waitFor(() => seesAll(before), 10_000, 'changes before the kill seen by every agent');

  const failuresBefore = agents.map((a) => a.watcher.stats.failures);
  alive[0] = false;
  await replicas[0]!.kill();
  const later: string[] = [];
  for (let i = 0; i < 5; i++) later.push(await deployTo(db.sql, 'us-east-1'));
  await waitFor(() => seesAll([...before, ...later]), 15_000, 'changes after the kill seen by every agent').catch((err) => {
    const missing = agents.map((a) => ({ stats: a.watcher.stats, missing: later.filter((id) => a.controller.applied(`deployment_topology/${id}`) === undefined).length }));
    throw new Error(`${err.message}: ${JSON.stringify(missing)}`);
  });
  // Round robin put half the agents on the killed replica: they saw their stream cut.
  const cut = agents.filter((a, i) => a.watcher.stats.failures > failuresBefore[i]!).length;
  assert.ok(cut >= 1 && cut < AGENTS, `${cut} of ${AGENTS} agents had their stream cut`);
});
