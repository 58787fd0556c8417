// Full syncs hold a REPEATABLE READ transaction and one of a few snapshot slots while they
// stream. An agent that stops reading must not keep either; waiting for a slot is bounded and
// fair between regions.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import client from 'prom-client';
import { testDb } from '../helpers/db';
import { createAgentToken } from '../../src/store/agent-tokens';
import { TOKENS, readFeed, startFeedServer, waitFor } from './helpers';

const db = await testDb();
const BIG = 'ap-big';
const { token: bigToken } = await createAgentToken(db.sql, BIG);
// ~20 MB of snapshot: more than the kernel buffers of a loopback socket can hold, so a client
// that does not read blocks the server's writes.
await db.sql`
  INSERT INTO deployments (id, workspace_id, project_id, app_id, environment_id, image, cpu_millicores, memory_mib, replicas, port, regions, env)
  SELECT 'dep-big-' || g, 'default', 'default', 'default', 'default', 'img:1', 100, 128, 1, 8080, ARRAY[${BIG}],
         jsonb_build_object('BLOB', repeat('x', 5000))
  FROM generate_series(1, 4000) g`;
await db.sql`INSERT INTO deployment_topology (deployment_id, region, workspace_id, replicas)
             SELECT 'dep-big-' || g, ${BIG}, 'default', 1 FROM generate_series(1, 4000) g`;

/** Snapshot transactions of the feed's pool now open in this database. */
async function snapshotsOpen(): Promise<number> {
  const [r] = await db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = 'feed-test-ctrl' AND xact_start IS NOT NULL
      AND query LIKE '%deployment_topology t JOIN deployments%'`;
  return r!.n;
}

/**
 * A client that sends the request and does not read the answer until told to. A paused socket
 * sees no 'close' (the server's FIN waits behind unread data), so `drain()` starts reading and
 * resolves with the bytes received once the connection has ended.
 */
function stalledClient(url: string, token: string): { socket: Socket; drain: () => Promise<string> } {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.pause();
  socket.write(`GET /v1/cluster/changes?wait=30 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`);
  let got = '';
  const closed = new Promise<string>((r) => socket.once('close', () => r(got)));
  socket.on('error', () => {});
  after(() => socket.destroy());
  return {
    socket,
    drain: () => {
      socket.on('data', (d) => {
        // Keep the tail only: what matters is how the response ends.
        got = (got + d.toString('latin1')).slice(-4096);
      });
      socket.resume();
      return closed;
    },
  };
}

test('a full sync whose client stops reading is cut: its transaction ends and the slot serves the next agent', async () => {
  const server = await startFeedServer(db.url, { waitLimitMs: 30_000, maxConcurrentSnapshots: 1, snapshotWriteStallMs: 500 } as never);
  after(() => server.close());
  const stalled = stalledClient(server.url, bigToken);
  await waitFor(async () => (await snapshotsOpen()) > 0, 10_000, 'the stalled full sync holds its snapshot');

  // Another region's agent gets its full sync despite the single slot.
  const other = await readFeed(server.url, TOKENS['eu-west-1'], { wait: '0.1' });
  assert.equal(other.status, 200);
  assert.ok(other.lines.some((l) => l.type === 'snapshot_end'));
  // Once read, the cut connection ends long before its 30 s wait, without the snapshot's end.
  let timer: NodeJS.Timeout | undefined;
  const tail = await Promise.race([
    stalled.drain(),
    new Promise<string>((_, rej) => {
      timer = setTimeout(() => rej(new Error('the stalled connection was not cut')), 20_000);
    }),
  ]).finally(() => clearTimeout(timer));
  assert.doesNotMatch(tail, /snapshot_end/, 'cut mid-snapshot, not finished');
  await waitFor(async () => (await snapshotsOpen()) === 0, 10_000, 'no snapshot transaction left open');
});

test('the queue for snapshot slots is bounded per region: past it 503 with Retry-After, other regions still queue', async () => {
  const server = await startFeedServer(db.url, { waitLimitMs: 30_000, maxConcurrentSnapshots: 1, snapshotWriteStallMs: 3_000, snapshotQueuePerRegion: 2 } as never);
  after(() => server.close());
  const registry = new client.Registry();
  server.feed.registerMetrics(registry);
  const queuedNow = async () => ((await registry.getMetricsAsJSON()).find((m) => m.name === 'feed_snapshots_queued')?.values[0]?.value as number) ?? 0;
  stalledClient(server.url, bigToken);
  await waitFor(async () => (await snapshotsOpen()) > 0, 10_000, 'the stalled full sync holds the only slot');
  const full = () => readFeed(server.url, TOKENS['eu-west-1'], { wait: '0.1' });
  const queued = [full(), full()];
  await waitFor(async () => (await queuedNow()) === 2, 10_000, 'two full syncs of the region queued');
  const refused = await fetch(`${server.url}/v1/cluster/changes?wait=0.1`, { headers: { authorization: `Bearer ${TOKENS['eu-west-1']}` } });
  assert.equal(refused.status, 503, await refused.clone().text());
  assert.equal(((await refused.json()) as any).error.code, 'ERR_FEED_SYNC_BUSY');
  assert.ok(Number(refused.headers.get('retry-after')) >= 1, 'Retry-After names a wait');
  const west = readFeed(server.url, TOKENS['us-east-1'], { wait: '0.1' });
  for (const r of [...(await Promise.all(queued)), await west]) {
    assert.equal(r.status, 200);
    assert.ok(r.lines.some((l) => l.type === 'snapshot_end'));
  }
});
