// One transaction left open anywhere on the server holds back pg_snapshot_xmin and so every
// region's feed. ctrl must notice: settle lag as a metric, the blocking backend in its log and
// in /readyz, never the backend's query text.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import postgres from 'postgres';
import { pino } from 'pino';
import client from 'prom-client';
import { testDb } from '../helpers/db';
import { deployTo, startFeedServer, waitFor } from './helpers';

// Private server: this file holds a write transaction open on purpose.
const db = await testDb({ isolated: true });
const SECRET = 'sekrit-value-in-the-query-text';

test('an idle-in-transaction writer: settle lag grows, the blocker is named in the log, metrics and /readyz; all clear once it ends', async () => {
  const lines: any[] = [];
  const logger = pino({ level: 'info' }, new Writable({ write(c, _e, cb) { lines.push(JSON.parse(String(c))); cb(); } }));
  const server = await startFeedServer(db.url, { logger, settleLagMaxMs: 300 } as never);
  after(() => server.close());
  const registry = new client.Registry();
  server.feed.registerMetrics(registry);
  const readiness = server.feed.readinessCheck();
  const metric = async (name: string) => {
    const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
    return (m?.values[0]?.value as number | undefined) ?? NaN;
  };
  await waitFor(async () => (await readiness.check()) === null, 10_000, 'ready at first');

  // A session that wrote something (so it has an xid) and then sits idle in its transaction.
  const stuck = postgres(db.url, { max: 1, onnotice: () => {}, connection: { application_name: 'stuck-writer' } });
  after(() => stuck.end({ timeout: 1 }));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let opened!: (pid: number) => void;
  const pidP = new Promise<number>((r) => (opened = r));
  const tx = stuck.begin(async (t) => {
    const [row] = await t<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    const pid = row!.pid;
    await t`CREATE TEMP TABLE scratch (v text)`;
    await t.unsafe(`INSERT INTO scratch VALUES ('${SECRET}')`);
    opened(pid);
    await gate;
  });
  const pid = await pidP;
  const dep = await deployTo(db.sql, 'us-east-1');

  const reason = await waitFor(async () => {
    const r = await readiness.check();
    return typeof r === 'string' && r.includes(String(pid));
  }, 20_000, 'readiness names the blocking backend').then(() => readiness.check());
  assert.match(reason!, /stuck-writer/);
  assert.match(reason!, /idle in transaction/);
  assert.ok((await metric('feed_settle_lag_seconds')) > 0);
  assert.equal(await metric('feed_settle_blocked'), 1);
  await waitFor(() => lines.some((l) => l.blocker?.pid === pid && l.blocker?.applicationName === 'stuck-writer'), 5_000, 'a log line naming the blocker');
  assert.ok(!JSON.stringify(lines).includes(SECRET) && !reason!.includes(SECRET), 'the blocker\'s query text is never shown');
  assert.equal(server.feed.tailer.buffer.since('us-east-1', { txid: '0', id: '0' }, 10).entries.some((e) => e.resourceId === dep), false, 'the change waits');

  release();
  await tx;
  await waitFor(async () => (await readiness.check()) === null, 20_000, 'ready again once the writer ends');
  assert.equal(await metric('feed_settle_blocked'), 0);
  assert.equal(await metric('feed_settle_lag_seconds'), 0);
  await waitFor(() => server.feed.tailer.buffer.since('us-east-1', { txid: '0', id: '0' }, 1_000).entries.some((e) => e.resourceId === dep), 10_000, 'the change settles');
});
