import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { createDb } from '../../src/store';
import { upsertTopology } from '../../src/store/topology';
import { Watcher } from '../../src/sync/watcher';
import { RecordingController, TOKENS, silent, sleep, startFeedServer, waitFor } from './helpers';

const WRITERS = 16;
const CHANGES_PER_WRITER = 5_000;

const db = await testDb({ isolated: true });
const server = await startFeedServer(db.url, { waitLimitMs: 5_000, heartbeatMs: 1_000 });
after(() => server.close());

test('16 concurrent writers × 5,000 changes with random transaction lengths and rollbacks: every committed change delivered, no rolled-back one', async () => {
  const total = WRITERS * CHANGES_PER_WRITER;
  // One deployment per change, so every change is its own resource: level-triggered
  // coalescing cannot hide a missed change behind a later one.
  await db.sql`
    INSERT INTO deployments (id, workspace_id, project_id, app_id, environment_id, image, cpu_millicores, memory_mib, replicas, port, regions)
    SELECT 'dep-w' || g, 'default', 'default', 'default', 'default', 'img:' || g, 100, 128, 1, 8080, ARRAY['us-east-1']
    FROM generate_series(0, ${total - 1}) g`;

  const ctrl = new RecordingController();
  // The periodic audit resync is not under test: on a busy machine this test can outlast it.
  const w = new Watcher({ controlPlaneUrl: server.url, token: TOKENS['us-east-1'], region: 'us-east-1', controller: ctrl, logger: silent, backoffMinMs: 50, backoffMaxMs: 100, concurrency: 16, resyncIntervalMs: 3_600_000 });
  w.start();
  after(() => w.stop());
  await waitFor(() => w.stats.snapshotsCompleted === 1, 5_000, 'initial snapshot');

  const writers = createDb(db.url, { max: WRITERS, applicationName: 'writers' });
  after(() => writers.end({ timeout: 1 }));
  const committed = new Map<string, number>();
  const rolledBack = new Set<string>();
  class Rollback extends Error {}

  await Promise.all(
    Array.from({ length: WRITERS }, async (_, wi) => {
      let i = 0;
      while (i < CHANGES_PER_WRITER) {
        const n = Math.min(1 + Math.floor(Math.random() * 25), CHANGES_PER_WRITER - i);
        const batch = Array.from({ length: n }, (_, k) => ({ id: `dep-w${wi * CHANGES_PER_WRITER + i + k}`, replicas: 1 + Math.floor(Math.random() * 999) }));
        i += n;
        const rollback = Math.random() < 0.1;
        // Mostly short transactions, some held open long enough for later ones to overtake them.
        const hold = Math.random() < 0.05 ? 20 + Math.random() * 40 : Math.random() * 2;
        try {
          await writers.begin(async (tx) => {
            await Promise.all(batch.map((b) => upsertTopology(tx, { deploymentId: b.id, region: 'us-east-1', workspaceId: 'default', replicas: b.replicas })));
            await sleep(hold);
            if (rollback) throw new Rollback();
          });
          for (const b of batch) committed.set(b.id, b.replicas);
        } catch (err) {
          if (!(err instanceof Rollback)) throw err;
          for (const b of batch) rolledBack.add(b.id);
        }
      }
    }),
  );
  assert.equal(committed.size + rolledBack.size, total);
  assert.ok(rolledBack.size > 0 && committed.size > 0);

  // Every committed change delivered with its own value (the condition itself, not a count and
  // a pause after it).
  const undelivered = () =>
    [...committed]
      .filter(([id, replicas]) => {
        const s = ctrl.applied(`deployment_topology/${id}`);
        return !(s && s.kind === 'deployment' && s.replicas === replicas);
      })
      .map(([id]) => id);
  await waitFor(() => undelivered().length === 0, { what: 'every committed change delivered', show: () => undelivered().slice(0, 10) });
  const missing = [...committed.keys()].filter((id) => !ctrl.current.has(`deployment_topology/${id}`));
  assert.deepEqual(missing, [], 'every committed change delivered');
  for (const [id, replicas] of committed) {
    const s = ctrl.applied(`deployment_topology/${id}`);
    assert.ok(s && s.kind === 'deployment' && s.replicas === replicas, `state of ${id}`);
  }
  const leaked = ctrl.calls.filter((c) => rolledBack.has(c.key.split('/')[1]!));
  assert.deepEqual(leaked, [], 'no rolled-back change delivered');
  assert.equal(w.stats.snapshotsStarted, 1, 'delivered incrementally, no resync');
  assert.equal(w.stats.failures, 0);
  await w.stop();
});
