// Fair full syncs (issue 26 item 3): one region's token cannot hold every snapshot slot while
// another region waits, a whole full sync has a deadline (not only each write), and an agent
// that hangs up while waiting for a slot is not logged as an error.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { testDb } from '../helpers/db';
import { createAgentToken } from '../../src/store/agent-tokens';
import { FairSlots } from '../../src/sync/slots';
import { captureLogger } from '../http/helpers';
import { TOKENS, readFeed, startFeedServer, waitFor } from './helpers';
import { within } from '../helpers/wait';
import { Registry } from 'prom-client';

test('slots: a region alone takes at most half; a second region starts at once; three share by turn', async () => {
  const slots = new FairSlots(4, 16, 60_000);
  const a1 = await slots.acquire('a');
  const a2 = await slots.acquire('a');
  let a3Granted = false;
  const a3 = slots.acquire('a').then((r) => ((a3Granted = true), r));
  // Granted at once: on promise jobs alone, before any timer (a release of a's) could run.
  let b1: (() => void) | undefined;
  void slots.acquire('b').then((r) => (b1 = r));
  await new Promise((r) => setImmediate(r));
  assert.ok(b1, 'region b waited behind region a although slots were free');
  assert.equal(slots.holding('a'), 2);
  assert.equal(a3Granted, false, 'region a holds more than half the slots');
  const b2 = await slots.acquire('b');
  // c arrives: a and b hold 2 each; the next freed slot of a is c's, not a's own waiter.
  const order: string[] = [];
  const c1 = slots.acquire('c').then((r) => (order.push('c1'), r));
  void a3.then(() => order.push('a3'));
  a1();
  await c1;
  assert.deepEqual(order, ['c1']);
  b1();
  (await a3)();
  for (const r of [a2, b2, await c1]) r();
  assert.equal(slots.queued, 0);
});

const db = await testDb();
const BIG = 'ap-big';
const { token: bigToken } = await createAgentToken(db.sql, BIG);
// ~20 MB of snapshot: more than a loopback socket buffers, so a client that reads slowly or
// not at all holds its full sync open.
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

/** A full-sync request whose answer is read `bytesPerTick` every `tickMs` (0: not at all). */
function slowClient(url: string, token: string, bytesPerTick: number, tickMs = 100): { socket: Socket; ended: Promise<string> } {
  const { port } = new URL(url);
  const socket = connect({ port: Number(port), host: '127.0.0.1' });
  socket.pause();
  socket.write(`GET /v1/cluster/changes?wait=60 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`);
  let tail = '';
  socket.on('error', () => {});
  const ended = new Promise<string>((resolve) => socket.once('close', () => resolve(tail)));
  if (bytesPerTick > 0) {
    const timer = setInterval(() => {
      for (let n = 0; n < bytesPerTick; ) {
        const chunk = socket.read() as Buffer | null;
        if (!chunk) break;
        n += chunk.length;
        tail = (tail + chunk.toString('latin1')).slice(-4096);
      }
    }, tickMs);
    socket.once('close', () => clearInterval(timer));
  }
  after(() => socket.destroy());
  return { socket, ended };
}

test('one region holding every stream its token allows leaves another region its full sync at once', async () => {
  const server = await startFeedServer(db.url, { waitLimitMs: 30_000, maxConcurrentSnapshots: 4, agentTokens: TOKENS });
  after(() => server.close());
  // Four full syncs of the big region that do not read: each would hold a slot up to the stall limit.
  for (let i = 0; i < 4; i++) slowClient(server.url, bigToken, 0);
  await waitFor(async () => (await snapshotsOpen()) >= 2, 10_000, 'the big region holds snapshots');
  const other = await readFeed(server.url, TOKENS['eu-west-1'], { wait: '0.1' });
  assert.equal(other.status, 200);
  assert.ok(other.lines.some((l) => l.type === 'snapshot_end'), 'the other region got its whole snapshot');
  // ...while the big region still held its slots: it did not wait for one of them to free.
  assert.ok((await snapshotsOpen()) >= 2, 'the big region\'s full syncs were still open');
});

test('a full sync read just fast enough never to stall is cut at the snapshot deadline', async () => {
  // No write stall limit to speak of (10 minutes), so only the deadline can end it early.
  const server = await startFeedServer(db.url, { waitLimitMs: 30_000, snapshotDeadlineMs: 1_000, snapshotWriteStallMs: 600_000, agentTokens: TOKENS });
  after(() => server.close());
  // 16 KB every 100 ms: 20 MB would take two minutes, past the safety net of the wait below.
  const slow = slowClient(server.url, bigToken, 16 * 1024);
  const tail = await within(slow.ended, 'the slow full sync cut');
  assert.doesNotMatch(tail, /snapshot_end/, 'cut, not finished');
});

test('an agent that hangs up while waiting for a slot is not logged as an error', async () => {
  const log = captureLogger('debug');
  const server = await startFeedServer(db.url, { waitLimitMs: 30_000, maxConcurrentSnapshots: 1, logger: log.logger, agentTokens: TOKENS });
  after(() => server.close());
  slowClient(server.url, bigToken, 0); // holds the only slot
  await waitFor(async () => (await snapshotsOpen()) === 1, { what: 'the only slot taken' });
  const waiting = slowClient(server.url, TOKENS['eu-west-1'], 0);
  const metrics = new Registry();
  server.feed.registerMetrics(metrics);
  const queued = async () => (await metrics.getSingleMetric('feed_snapshots_queued')!.get()).values[0]?.value;
  await waitFor(async () => (await queued()) === 1, { what: 'the second agent waiting for a slot', show: queued });
  waiting.socket.destroy();
  await waitFor(() => log.lines.some((l) => l.includes('agent went away while waiting for a snapshot slot') || l.includes('"level":50')), 10_000, 'ctrl noticed');
  assert.deepEqual(log.lines.filter((l) => /"level":(40|50|60)/.test(l)), []);
});
