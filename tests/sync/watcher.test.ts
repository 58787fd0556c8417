import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testDb } from '../helpers/db';
import { upsertTopology } from '../../src/store/topology';
import { Watcher, type WatcherOptions } from '../../src/sync/watcher';
import { PermanentError } from '../../src/sync/wire';
import { RecordingController, TOKENS, deployTo, newDeployment, silent, startFeedServer, waitFor } from './helpers';

const db = await testDb();
const server = await startFeedServer(db.url, { waitLimitMs: 1_000, heartbeatMs: 200 });
after(() => server.close());

/**
 * A line-aware HTTP proxy in front of ctrl. `cutAfter(reqIndex, line)` is asked before each
 * line is forwarded; returning true destroys the client's connection instead (a cut stream).
 */
async function lineProxy(upstream: string, cutAfter: (req: number, line: any, url: URL) => boolean) {
  const urls: URL[] = [];
  const cuts: number[] = [];
  const srv: Server = createServer((req, res: ServerResponse) => {
    const n = urls.length;
    const u = new URL(req.url!, upstream);
    urls.push(u);
    const up = request(u, { method: req.method, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode!, ur.headers);
      let rest = '';
      ur.on('data', (chunk: Buffer) => {
        rest += chunk.toString();
        let nl: number;
        while ((nl = rest.indexOf('\n')) >= 0) {
          const line = rest.slice(0, nl);
          rest = rest.slice(nl + 1);
          if (res.destroyed) return;
          let parsed: any;
          try {
            parsed = JSON.parse(line);
          } catch {
            parsed = line;
          }
          if (cutAfter(n, parsed, u)) {
            cuts.push(n);
            ur.destroy();
            // end, not destroy: lines already written reach the agent, then the connection
            // closes in the middle of the chunked body, which is what a cut looks like.
            res.socket?.end();
            return;
          }
          res.write(line + '\n');
        }
      });
      ur.on('end', () => res.end(rest));
      ur.on('error', () => res.destroy());
    });
    up.on('error', () => res.destroy());
    // A client that goes away takes its upstream poll with it, as real proxies do; otherwise
    // the poll holds one of the token's stream slots on ctrl until its wait runs out.
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  after(() => new Promise<void>((r) => srv.close(() => r())));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, urls, cuts };
}

function watcher(url: string, ctrl: RecordingController, extra: Partial<WatcherOptions> = {}) {
  const w = new Watcher({
    controlPlaneUrl: url,
    token: TOKENS['us-east-1'],
    region: 'us-east-1',
    controller: ctrl,
    logger: silent,
    backoffMinMs: 300,
    backoffMaxMs: 300,
    retries: 0,
    waitSeconds: 1,
    ...extra,
  });
  after(() => w.stop());
  return w;
}

test('a stream cut in the middle of a snapshot: no GC, no cursor; the reconnect syncs fully', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) ids.push(await deployTo(db.sql, 'us-east-1'));
  let changesSeen = 0;
  const proxy = await lineProxy(server.url, (n, line) => n === 0 && line.type === 'change' && ++changesSeen > 10);
  const ctrl = new RecordingController();
  const w = watcher(proxy.url, ctrl);
  w.start();
  await waitFor(() => w.stats.failures === 1, 5_000, 'the cut');
  assert.deepEqual(proxy.cuts, [0]);
  assert.equal(ctrl.gcs.length, 0, 'no GC after an incomplete snapshot');
  assert.equal(w.cursor, undefined, 'no cursor committed from an incomplete snapshot');
  assert.equal(w.stats.snapshotsCompleted, 0);
  await waitFor(() => w.stats.snapshotsCompleted === 1, 5_000, 'the resumed full sync');
  assert.equal(proxy.urls[1]!.searchParams.get('cursor'), null, 'the reconnect is a full sync again');
  assert.equal(ctrl.gcs.length, 1);
  for (const id of ids) assert.ok(ctrl.gcs[0]!.has(`deployment_topology/${id}`));
  assert.ok(w.cursor);
  await w.stop();
});

test('a cut during incremental changes resumes from the last handled event', async () => {
  let changeLines = 0;
  let armed = false;
  // Cursor of the last line that reached the agent before the cut (a change, or an `end` of
  // an earlier poll): every delivered event is handled, so the reconnect must start there.
  let lastDelivered: string | undefined;
  let atCut: string | undefined;
  const proxy = await lineProxy(server.url, (_n, line) => {
    if (armed && line.type === 'change' && line.cursor && ++changeLines === 4) {
      armed = false;
      atCut = lastDelivered;
      return true;
    }
    if (line.cursor) lastDelivered = line.cursor;
    return false;
  });
  const ctrl = new RecordingController();
  const w = watcher(proxy.url, ctrl);
  w.start();
  await waitFor(() => w.stats.snapshotsCompleted === 1, 5_000, 'snapshot');
  armed = true;
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push(await deployTo(db.sql, 'us-east-1'));
  await waitFor(() => ids.every((id) => ctrl.applied(`deployment_topology/${id}`)), 8_000, 'all six changes');
  assert.equal(proxy.cuts.length, 1, 'the stream was cut once');
  // The fourth change line was never delivered: the reconnect starts right after what was.
  const reconnect = proxy.urls[proxy.cuts[0]! + 1]!;
  assert.ok(atCut);
  assert.equal(reconnect.searchParams.get('cursor'), atCut);
  assert.equal(w.stats.snapshotsStarted, 1, 'resumed incrementally, no resync');
  await w.stop();
});

test('a failing handler holds the cursor before its event; the event is redelivered and handled', async () => {
  const ctrl = new RecordingController();
  const proxy = await lineProxy(server.url, () => false);
  const w = watcher(proxy.url, ctrl);
  w.start();
  await waitFor(() => w.stats.snapshotsCompleted === 1, 5_000, 'snapshot');
  const before = w.cursor!;
  const x = await newDeployment(db.sql);
  const y = await newDeployment(db.sql);
  let failX = true;
  ctrl.hook = (op, ref) => {
    if (ref.id === x && failX) throw new Error('api server unavailable');
  };
  await upsertTopology(db.sql, { deploymentId: x, region: 'us-east-1', workspaceId: 'default', replicas: 1 });
  await upsertTopology(db.sql, { deploymentId: y, region: 'us-east-1', workspaceId: 'default', replicas: 1 });
  await waitFor(() => w.stats.failures >= 1, 5_000, 'the failure');
  const cursorAfterFailure = w.cursor;
  // Nothing at or after x's event may be committed while x is unhandled.
  assert.equal(cursorAfterFailure, before);
  failX = false;
  await waitFor(() => !!ctrl.applied(`deployment_topology/${x}`), 5_000, 'x handled after retry');
  const retried = proxy.urls.at(-1)!;
  assert.equal(retried.searchParams.get('cursor'), before, 'the reconnect resumes before x');
  await waitFor(() => w.cursor !== before, 5_000, 'cursor moves on');
  await w.stop();
});

test('a permanent failure is reported and does not block the cursor', async () => {
  const reported: string[] = [];
  const ctrl = new RecordingController();
  const w = watcher(server.url, ctrl, { onPermanentFailure: (ref) => void reported.push(ref.id) });
  w.start();
  await waitFor(() => w.stats.snapshotsCompleted === 1, 5_000, 'snapshot');
  const bad = await newDeployment(db.sql);
  ctrl.hook = (op, ref) => {
    if (ref.id === bad) throw new PermanentError('422 invalid object');
  };
  await upsertTopology(db.sql, { deploymentId: bad, region: 'us-east-1', workspaceId: 'default', replicas: 1 });
  const good = await deployTo(db.sql, 'us-east-1');
  await waitFor(() => !!ctrl.applied(`deployment_topology/${good}`), 5_000, 'good applied');
  await waitFor(() => reported.includes(bad), 5_000, 'bad reported');
  assert.equal(w.stats.failures, 0);
  await w.stop();
});

test('periodic full resync runs GC each time', async () => {
  const ctrl = new RecordingController();
  const w = watcher(server.url, ctrl, { resyncIntervalMs: 300 });
  w.start();
  await waitFor(() => w.stats.snapshotsCompleted >= 3, 8_000, 'three snapshots');
  assert.ok(ctrl.gcs.length >= 3);
  await w.stop();
});

/** A fake ctrl that answers every poll with the given body. */
async function fakeCtrl(body: string) {
  let hits = 0;
  const srv = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end(body);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  after(() => new Promise<void>((r) => srv.close(() => r())));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, hits: () => hits };
}

const applyLine = (id: string) =>
  JSON.stringify({
    type: 'change',
    resource: { type: 'cilium_network_policy', id, region: 'us-east-1' },
    state: { action: 'apply', kind: 'cilium_network_policy', policyId: id, workspaceId: 'w', projectId: 'p', appId: 'a', environmentId: 'e', region: 'us-east-1', namespace: 'sentinel' },
  });

for (const [name, bad] of [
  ['an unknown line type', JSON.stringify({ type: 'surprise' })],
  ['a state that does not match its resource type', JSON.stringify({ type: 'change', resource: { type: 'sentinel', id: 's', region: 'us-east-1' }, state: JSON.parse(applyLine('x')).state })],
  ['a line that is not JSON', '{"type":"change",'],
  ['a change for another region', applyLine('x').replace('"region":"us-east-1"}', '"region":"eu-west-1"}')],
] as const) {
  test(`${name} is an error, never skipped: nothing after it is handled, no GC, no cursor`, async () => {
    const fake = await fakeCtrl(['{"type":"snapshot_begin"}', applyLine('first'), bad, applyLine('after'), '{"type":"snapshot_end","cursor":"e:1:1","count":2}', ''].join('\n'));
    const ctrl = new RecordingController();
    const w = watcher(fake.url, ctrl);
    w.start();
    // The line before the bad one went through the dispatcher (the handling path ran), and
    // stop() waits for every handler in flight: 'after', had it been submitted, is done by then.
    await waitFor(() => w.stats.failures >= 1 && ctrl.applied('cilium_network_policy/first') !== undefined, 3_000, 'protocol error after the first line was handled');
    await w.stop();
    assert.equal(ctrl.applied('cilium_network_policy/after'), undefined);
    assert.equal(ctrl.gcs.length, 0);
    assert.equal(w.cursor, undefined);
  });
}

test('a snapshot that ends without snapshot_end is a cut', async () => {
  const fake = await fakeCtrl(['{"type":"snapshot_begin"}', applyLine('a'), ''].join('\n'));
  const ctrl = new RecordingController();
  const w = watcher(fake.url, ctrl);
  w.start();
  await waitFor(() => w.stats.failures >= 1, 3_000, 'cut detected');
  assert.equal(ctrl.gcs.length, 0);
  assert.equal(w.cursor, undefined);
  await w.stop();
});

test('a line longer than the limit is a protocol error: cut, no GC, no cursor, reconnect', async () => {
  const long = JSON.stringify({
    type: 'change',
    resource: { type: 'deployment_topology', id: 'dep-long', region: 'us-east-1' },
    state: {
      action: 'apply', kind: 'deployment', deploymentId: 'dep-long', workspaceId: 'w', projectId: 'p', appId: 'a', environmentId: 'e', region: 'us-east-1',
      namespace: 'unkey', image: 'img:1', replicas: 1, cpuMillicores: 100, memoryMib: 128, port: 8080, command: [], env: { BIG: 'x'.repeat(4096) },
    },
  });
  const fake = await fakeCtrl(['{"type":"snapshot_begin"}', applyLine('first'), long, '{"type":"snapshot_end","cursor":"e:1:1","count":2}', ''].join('\n'));
  const ctrl = new RecordingController();
  const w = watcher(fake.url, ctrl, { maxLineBytes: 1024 } as Partial<WatcherOptions>);
  w.start();
  await waitFor(() => w.stats.failures >= 2 && fake.hits() >= 2, 5_000, 'protocol error twice (reconnected)');
  assert.equal(ctrl.applied('deployment_topology/dep-long'), undefined);
  assert.equal(ctrl.gcs.length, 0);
  assert.equal(w.cursor, undefined);
  await w.stop();
});

test('a 503 with Retry-After (full-sync slots busy) is back-pressure: waited out as asked, counted as deferred, not as a failure', async () => {
  const hits: number[] = [];
  const srv = createServer((_req, res) => {
    hits.push(performance.now());
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '3' });
    res.end(JSON.stringify({ error: { code: 'ERR_FEED_SYNC_BUSY', message: 'full sync refused for now', details: [] } }));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  after(() => new Promise<void>((r) => srv.close(() => r())));
  const w = watcher(`http://127.0.0.1:${(srv.address() as AddressInfo).port}`, new RecordingController());
  w.start();
  await waitFor(() => w.stats.deferred >= 1, 5_000, 'deferred');
  // The watcher comes back on its own: wait for that second poll and measure the gap. Its own
  // back-off is 300 ms and a Retry-After it could not read counts as 1 s; honouring the 3 s
  // asked for (spread over up to twice that) puts the next poll 3 to 6 s later.
  await waitFor(() => hits.length >= 2, 15_000, 'the poll after the wait');
  const gap = hits[1]! - hits[0]!;
  // Only the lower bound tells the header apart from the back-off; the upper one is loose so a
  // loaded machine's timer lag cannot fail it.
  assert.ok(gap >= 2_990 && gap < 10_000, `next poll ${Math.round(gap)} ms later`);
  assert.ok(w.stats.deferred >= 1);
  assert.equal(w.stats.failures, 0);
  await w.stop();
});

test('a handler failing just after the whole response arrived ends the stream quietly: the abort never reaches the pooled socket', async () => {
  // The response (kept alive, as through a proxy) ends in the chunk that carries the one
  // incremental event, and its handler fails at once. The failure aborts the request; Node's
  // own abort then destroyed the socket the response had just left for the keep-alive pool,
  // whose error had no listener: an uncaught exception, which ends krane. Found by
  // tests/sync/handover-model.test.ts.
  const change = JSON.stringify({ ...JSON.parse(applyLine('late')), cursor: 'e:2:1' });
  const fake = await fakeCtrl(['{"type":"snapshot_begin"}', '{"type":"snapshot_end","cursor":"e:1:1","count":0}', change, '{"type":"end","cursor":"e:2:1"}', ''].join('\n'));
  const ctrl = new RecordingController();
  ctrl.hook = (_op, ref) => {
    if (ref.id === 'late') throw new Error('api server unavailable');
  };
  const uncaught: Error[] = [];
  const onUncaught = (err: Error) => void uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  after(() => void process.off('uncaughtException', onUncaught));
  const w = watcher(fake.url, ctrl, { retries: 0 });
  w.start();
  await waitFor(() => w.stats.failures >= 1, 5_000, 'the stream failing on the handler');
  await w.stop();
  assert.deepEqual(uncaught.map((e) => e.message), []);
  assert.equal(w.cursor, 'e:1:1', 'the cursor stays before the failed event');
});

test('a stream with no line for the idle limit is cut, counted from its last line, not its first', async () => {
  // A ctrl that sends two snapshot lines some time apart and then nothing, keeping the
  // connection open. Each line's write is timed here, and so is the moment the watcher gives up
  // (the socket closes). The last line the watcher applied was received after its write, so
  // the idle limit must run out at least the limit after that write.
  const IDLE_MS = 300;
  const written = new Map<string, number>();
  const closes: number[] = [];
  let polls = 0;
  const srv = createServer((req, res) => {
    // Only the first poll is timed: the watcher reconnects after the cut.
    if (++polls > 1) return void res.writeHead(503).end();
    req.socket.once('close', () => closes.push(performance.now()));
    const send = (id: string) => {
      if (res.destroyed) return;
      written.set(id, performance.now());
      res.write(applyLine(id) + '\n');
    };
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write('{"type":"snapshot_begin"}\n');
    send('first');
    setTimeout(() => send('second'), IDLE_MS / 2).unref();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  after(() => {
    srv.closeAllConnections();
    return new Promise<void>((r) => srv.close(() => r()));
  });
  const ctrl = new RecordingController();
  const w = watcher(`http://127.0.0.1:${(srv.address() as AddressInfo).port}`, ctrl, { idleTimeoutMs: IDLE_MS });
  w.start();
  await waitFor(() => w.stats.failures >= 1 && closes.length >= 1, 10_000, 'the idle stream cut');
  await w.stop();
  const applied = ctrl.calls.map((c) => c.key.split('/')[1]!);
  assert.ok(applied.length > 0, 'a line was handled before the cut');
  const lastWrite = Math.max(...applied.map((id) => written.get(id)!));
  // 1 ms of slack: the timer's clock is the event loop's, in whole milliseconds.
  const gap = closes[0]! - lastWrite;
  assert.ok(gap >= IDLE_MS - 1, `cut ${gap.toFixed(1)} ms after the last line handled (${applied.join(', ')})`);
  assert.equal(w.cursor, undefined, 'no cursor from a snapshot that never ended');
});
