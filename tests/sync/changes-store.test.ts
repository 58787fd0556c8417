import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import * as changes from '../../src/store/changes';
import { upsertTopology } from '../../src/store/topology';
import { getFeedEpoch } from '../../src/store/system';
import { encodeCursor } from '../../src/sync/cursor';
import { createDb, type Sql } from '../../src/store';
import { TOKENS, deployTo, newDeployment, readFeed, startFeedServer, waitFor } from './helpers';

const db = await testDb({ isolated: true });

/**
 * Waits until every row written so far is settled. xmin is cluster-wide: an open transaction
 * in another test file's database holds it back, so a row committed here settles only after it.
 */
async function settled(): Promise<void> {
  const [last] = await db.sql<{ txid: string; id: string }[]>`SELECT txid::text AS txid, id::text AS id FROM deployment_changes ORDER BY txid DESC, id DESC LIMIT 1`;
  if (!last) return;
  await waitFor(
    async () => {
      const head = await changes.settledHead(db.sql);
      return head.txid === last.txid ? BigInt(head.id) >= BigInt(last.id) : BigInt(head.txid) > BigInt(last.txid);
    },
    { what: `rows up to ${last.txid}:${last.id} settled`, show: () => changes.settledHead(db.sql) },
  );
}

test('settled reads wait for an older open transaction and then return both rows in (txid, id) order', async () => {
  const head = await changes.settledHead(db.sql);
  const a = await newDeployment(db.sql);
  const b = await newDeployment(db.sql);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let written!: () => void;
  const w = new Promise<void>((r) => (written = r));
  const txA = db.sql.begin(async (tx) => {
    await upsertTopology(tx, { deploymentId: a, region: 'us-east-1', workspaceId: 'default', replicas: 1 });
    written();
    await gate;
  });
  await w;
  await upsertTopology(db.sql, { deploymentId: b, region: 'us-east-1', workspaceId: 'default', replicas: 1 });
  const blocked = await changes.tailSettled(db.sql, head, 100);
  assert.deepEqual(blocked.rows, [], 'B is committed but not settled while A is open');
  assert.equal(blocked.pending, true);
  release();
  await txA;
  await settled();
  const r = await changes.tailSettled(db.sql, head, 100);
  assert.deepEqual(r.rows.map((x) => x.resourceId), [a, b]);
  assert.equal(r.pending, false);
  assert.equal(r.epoch, await getFeedEpoch(db.sql));
});

test('cleanup deletes an expired prefix in batches, keeps its boundary row, and expired cursors get 410', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 25; i++) ids.push(await deployTo(db.sql, 'eu-west-1'));
  const rows = await db.sql<{ id: string; txid: string }[]>`SELECT id::text AS id, txid::text AS txid FROM deployment_changes ORDER BY txid, id`;
  const total = rows.length;
  const boundaryIdx = total - 6;
  // Age every row up to the boundary past the TTL (the newest aged row is the boundary).
  await db.sql`UPDATE deployment_changes SET created_at = now() - interval '2 days' - (id * interval '1 ms') * -1
               WHERE (txid, id) <= (${rows[boundaryIdx]!.txid}::xid8, ${rows[boundaryIdx]!.id}::bigint)`;
  await settled();
  const server = await startFeedServer(db.url, { waitLimitMs: 200, cleanupTtlMs: 24 * 3_600_000 });
  after(() => server.close());
  const epoch = await getFeedEpoch(db.sql);
  const oldCursor = encodeCursor(epoch, rows[3]!);

  // Before cleanup the old cursor is fine: nothing was deleted.
  const before = await readFeed(server.url, TOKENS['eu-west-1'], { cursor: oldCursor, wait: '0.1' });
  assert.equal(before.status, 200);
  assert.ok(before.lines.filter((l) => l.type === 'change').length >= 20, 'old cursor served from the table');

  assert.equal(await changes.deleteExpired(db.sql, 24 * 3_600_000, 7), boundaryIdx);
  const left = await db.sql<{ id: string }[]>`SELECT id::text AS id FROM deployment_changes ORDER BY txid, id`;
  assert.equal(left.length, total - boundaryIdx);
  assert.equal(left[0]!.id, rows[boundaryIdx]!.id, 'the boundary row is kept');
  const floor = await changes.retentionFloor(db.sql, 24 * 3_600_000);
  assert.equal(floor.expired, true);

  const gone = await readFeed(server.url, TOKENS['eu-west-1'], { cursor: oldCursor });
  assert.equal(gone.status, 410);
  assert.match(JSON.parse(gone.body).error.message, /retention/);
  const atBoundary = await readFeed(server.url, TOKENS['eu-west-1'], { cursor: encodeCursor(epoch, rows[boundaryIdx]!), wait: '0.1' });
  assert.equal(atBoundary.status, 200);
  assert.equal(atBoundary.lines.filter((l) => l.type === 'change').length, 5, 'the five rows after the boundary');
  // A second pass finds nothing more to delete.
  assert.equal(await server.feed.cleanup(), 0);
});

test('a stream whose cursor is older than the in-memory buffer is served from the table', async () => {
  await settled();
  const server = await startFeedServer(db.url, { waitLimitMs: 400, bufferSize: 5, pollMs: 20, cleanupTtlMs: 24 * 3_600_000 });
  after(() => server.close());
  const start = await readFeed(server.url, TOKENS['us-east-1'], { wait: '0.1' });
  const cursor = start.lines.find((l) => l.type === 'snapshot_end').cursor;
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) ids.push(await deployTo(db.sql, 'us-east-1'));
  // Let the tailer read them all, so the buffer (5 entries) has moved far past the cursor.
  const [last] = await changes.listChangesFor(db.sql, 'deployment_topology', ids.at(-1)!);
  await waitFor(() => server.feed.tailer.buffer.head.id === last!.id, { what: 'the tailer read all 30', show: () => server.feed.tailer.buffer.head });
  assert.equal(server.feed.tailer.buffer.size, 5);
  const r = await readFeed(server.url, TOKENS['us-east-1'], { cursor, wait: '0.3' });
  assert.equal(r.status, 200);
  const got = new Set(r.lines.filter((l) => l.type === 'change').map((l) => l.resource.id));
  for (const id of ids) assert.ok(got.has(id), id);
});

test('cleanup that commits between the retention check and the table read cannot make a lagging stream skip rows', async () => {
  await settled();
  const TTL = 3_600_000;
  // The feed's pool, with one hook: just before the stream's first table read of the region,
  // cleanup ages and deletes the rows right after the stream's cursor, and commits.
  let armed = false;
  let fired = false;
  const real = createDb(db.url, { max: 10, applicationName: 'feed-test-ctrl' });
  after(() => real.end({ timeout: 1 }));
  const hooked = new Proxy(real, {
    apply(target, self, args: [TemplateStringsArray, ...unknown[]]) {
      const text = Array.isArray(args[0]) ? args[0].join('?') : '';
      if (armed && !fired && /region = \?/.test(text) && /\(txid, id\) <= /.test(text)) {
        fired = true;
        return (async () => {
          await ageAndDelete();
          return Reflect.apply(target, self, args);
        })();
      }
      return Reflect.apply(target, self, args);
    },
  }) as unknown as Sql;
  const server = await startFeedServer(db.url, { sql: hooked, waitLimitMs: 400, bufferSize: 3, pollMs: 20, cleanupTtlMs: TTL });
  after(() => server.close());
  const start = await readFeed(server.url, TOKENS['eu-west-1'], { wait: '0.1' });
  const cursor = start.lines.find((l) => l.type === 'snapshot_end').cursor;
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) ids.push(await deployTo(db.sql, 'eu-west-1'));
  const mine = await db.sql<{ id: string; txid: string }[]>`
    SELECT id::text AS id, txid::text AS txid FROM deployment_changes WHERE resource_id IN ${db.sql(ids)} ORDER BY txid, id`;
  const [last] = await changes.listChangesFor(db.sql, 'deployment_topology', ids.at(-1)!);
  await waitFor(() => server.feed.tailer.buffer.head.id === last!.id, 20_000, 'the tailer read every row');

  // Rows up to the sixth become older than the TTL (each a little younger than the one
  // before, so the sixth is the cleanup boundary) and are deleted, boundary kept.
  async function ageAndDelete() {
    const boundary = mine[5]!;
    await db.sql`DELETE FROM deployment_changes WHERE (txid, id) < (${mine[0]!.txid}::xid8, ${mine[0]!.id}::bigint)`;
    await db.sql`UPDATE deployment_changes SET created_at = now() - interval '2 hours' + (id * interval '1 ms')
                 WHERE (txid, id) <= (${boundary.txid}::xid8, ${boundary.id}::bigint)`;
    await changes.deleteExpired(db.sql, TTL);
  }

  armed = true;
  const r = await readFeed(server.url, TOKENS['eu-west-1'], { cursor, wait: '0.3' });
  assert.ok(fired, 'cleanup ran between the check and the read');
  const got = new Set(r.lines.filter((l) => l.type === 'change').map((l) => l.resource.id));
  const complete = r.status === 200 && r.lines.at(-1)?.type === 'end';
  if (complete) {
    for (const id of ids) assert.ok(got.has(id), `a complete response must carry ${id}: rows were skipped silently`);
  }
  // The agent reconnects with the cursor it kept and learns that it fell behind retention.
  const again = await readFeed(server.url, TOKENS['eu-west-1'], { cursor, wait: '0.1' });
  assert.equal(again.status, 410);
});
