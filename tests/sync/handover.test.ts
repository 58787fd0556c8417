// The reconnect gap (issue 38): a long poll ends at its wait limit (early, at random, so a fleet
// does not reconnect together), and the agent's next poll takes a moment to be running. A
// change committed in that moment must not wait for it. The agent's reconnect is held by a
// proxy for as long as the test likes, so the order is made, not hoped for.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { listChangesFor } from '../../src/store/changes';
import { comparePositions, parseCursor } from '../../src/sync/cursor';
import { Watcher, type WatcherOptions } from '../../src/sync/watcher';
import { holdProxy } from './hold-proxy';
import { RecordingController, TOKENS, deployTo, silent, startFeedServer, waitFor } from './helpers';

const db = await testDb();
const server = await startFeedServer(db.url, { waitLimitMs: 2_000, heartbeatMs: 200 });
after(() => server.close());

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
    // Polls end within 0.25-0.5 s, so the test soon sees one end.
    waitSeconds: 0.5,
    ...extra,
  });
  after(() => w.stop());
  return w;
}

/** The committed cursor has passed the outbox row of `deploymentId`'s last change. */
async function passed(w: Watcher, deploymentId: string): Promise<boolean> {
  const rows = await listChangesFor(db.sql, 'deployment_topology', deploymentId);
  const last = rows.at(-1);
  return !!w.cursor && !!last && comparePositions(parseCursor(w.cursor), { txid: String(last.txid), id: String(last.id) }) >= 0;
}

test('a change committed while the agent reconnects reaches it before the reconnect is through', async () => {
  const proxy = await holdProxy(server.url);
  const ctrl = new RecordingController();
  const w = watcher(proxy.url, ctrl);
  w.start();
  await waitFor(() => w.stats.snapshotsCompleted === 1, 10_000, 'the full sync');
  // Every poll from now on is held: the first one's end sends the agent to a held reconnect.
  proxy.holding = true;
  await waitFor(() => proxy.held().length === 1, 10_000, 'the agent reconnecting');
  const id = await deployTo(db.sql, 'us-east-1');
  // The deadline is only a safety net: with the gap, the change waits for the release below.
  await waitFor(() => !!ctrl.applied(`deployment_topology/${id}`), 10_000, 'the change applied while the reconnect is held');
  assert.deepEqual(proxy.held().length, 1, 'the reconnect was still held when the change was applied');
  proxy.release();
  await waitFor(() => passed(w, id), 10_000, 'the cursor past the change once the new poll runs');
  assert.equal(ctrl.calls.filter((c) => c.key === `deployment_topology/${id}`).length, 1, 'applied once: the new poll resent it, the agent knew it');
  await w.stop();
});

const OLD_LINE_TYPES = new Set(['snapshot_begin', 'change', 'snapshot_end', 'heartbeat', 'end']);

/** An open feed response read line by line: `until` waits for a line matching `pred`. */
async function openPoll(url: string, query: Record<string, string>) {
  const u = new URL('/v1/cluster/changes', url);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  const ac = new AbortController();
  const res = await fetch(u, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` }, signal: ac.signal });
  assert.equal(res.status, 200);
  const lines: any[] = [];
  let done = false;
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          if (i > 0) lines.push(JSON.parse(buf.slice(0, i)));
          buf = buf.slice(i + 1);
        }
      }
    } catch {
      // closed by the test
    } finally {
      done = true;
    }
  })();
  after(() => ac.abort());
  return {
    lines,
    get done() {
      return done;
    },
    async until(pred: (l: any) => boolean, what: string) {
      await waitFor(() => lines.some(pred), 10_000, what);
      return lines.find(pred);
    },
    close: async () => {
      ac.abort();
      await reading;
    },
    ended: () => reading,
  };
}

test('a poll that asks for a handover gets one at its wait limit, and goes on sending changes until the agent closes it', async () => {
  // A grace far beyond the test: the poll after its handover ends only when the test closes it.
  const long = await startFeedServer(db.url, { waitLimitMs: 120_000, heartbeatMs: 200, handoverGraceMs: 600_000 });
  after(() => long.close());
  const first = await openPoll(long.url, { wait: '0.2', handover: '1' });
  const handover = await first.until((l) => l.type === 'handover', 'the handover line');
  assert.equal(typeof handover.cursor, 'string');
  assert.ok(first.lines.some((l) => l.type === 'snapshot_end'), 'after the full sync');
  const id = await deployTo(db.sql, 'us-east-1');
  const change = await first.until((l) => l.type === 'change' && l.resource.id === id, 'the change on the handed-over poll');
  assert.ok(comparePositions(parseCursor(change.cursor), parseCursor(handover.cursor)) > 0);
  // The next poll starts at the handover's cursor: it sends the change again, with the same cursor.
  const next = await openPoll(long.url, { cursor: handover.cursor, wait: '60', handover: '1' });
  const again = await next.until((l) => l.type === 'change' && l.resource.id === id, 'the change on the next poll');
  assert.equal(again.cursor, change.cursor);
  assert.ok(!first.done, 'the handed-over poll is still open: the agent closes it');
  assert.ok(!first.lines.some((l) => l.type === 'end'));
  await first.close();
  await next.close();
});

test('a handed-over poll that the agent does not close ends with end after the grace, at the handover cursor or later', async () => {
  const short = await startFeedServer(db.url, { waitLimitMs: 120_000, heartbeatMs: 200, handoverGraceMs: 200 });
  after(() => short.close());
  const poll = await openPoll(short.url, { wait: '0.2', handover: '1' });
  await poll.ended();
  const types = poll.lines.map((l) => l.type);
  const h = types.indexOf('handover');
  assert.ok(h > types.indexOf('snapshot_end'), `a handover after the snapshot: ${types.join(',')}`);
  assert.equal(types.at(-1), 'end');
  assert.equal(types.filter((t) => t === 'handover').length, 1);
  assert.ok(comparePositions(parseCursor(poll.lines.at(-1).cursor), parseCursor(poll.lines[h].cursor)) >= 0);
});

test('a poll that does not ask (a krane before the handover) gets only the lines it knows, and end at its wait limit', async () => {
  const poll = await openPoll(server.url, { wait: '0.2' });
  await poll.ended();
  assert.ok(poll.lines.length > 0);
  assert.deepEqual(poll.lines.filter((l) => !OLD_LINE_TYPES.has(l.type)), []);
  assert.equal(poll.lines.at(-1).type, 'end');
});

test('a ctrl before the handover ignores handover=1 (unknown query parameters are dropped) and ends its polls', async () => {
  // What lets a new krane ask any ctrl: a parameter ctrl does not know is no error.
  const unknown = await fetch(`${server.url}/v1/cluster/changes?wait=0.1&future=1`, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` } });
  assert.equal(unknown.status, 200);
  await unknown.text();
  const old = await startFeedServer(db.url, { waitLimitMs: 2_000, heartbeatMs: 200, handover: false });
  after(() => old.close());
  const poll = await openPoll(old.url, { wait: '0.2', handover: '1' });
  await poll.ended();
  assert.deepEqual(poll.lines.filter((l) => !OLD_LINE_TYPES.has(l.type)), []);
  assert.equal(poll.lines.at(-1).type, 'end');
});

test('handover must be 1: anything else is a 400 naming the parameter', async () => {
  const res = await fetch(`${server.url}/v1/cluster/changes?handover=yes`, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` } });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { error: { code: string; details: { field: string }[] } };
  assert.equal(body.error.code, 'ERR_VALIDATION_INVALID');
  assert.deepEqual(body.error.details.map((d) => d.field), ['query.handover']);
});

for (const [name, ctrlHandover, kraneHandover] of [
  ['a new krane against a ctrl before the handover', false, true],
  ['a krane before the handover against a new ctrl', true, false],
] as const) {
  test(`${name}: every change arrives and the cursor follows the ends`, async () => {
    const ctrlServer = ctrlHandover ? server : await startFeedServer(db.url, { waitLimitMs: 2_000, heartbeatMs: 200, handover: false });
    if (!ctrlHandover) after(() => ctrlServer.close());
    const ctrl = new RecordingController();
    const w = watcher(ctrlServer.url, ctrl, { handover: kraneHandover });
    w.start();
    await waitFor(() => w.stats.snapshotsCompleted === 1, 10_000, 'the full sync');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(await deployTo(db.sql, 'us-east-1'));
      // A poll ends (within 0.5 s) between the changes.
      const streams = w.stats.streams;
      await waitFor(() => w.stats.streams > streams, 10_000, 'the next poll');
    }
    await waitFor(() => ids.every((id) => ctrl.applied(`deployment_topology/${id}`)), 10_000, 'every change');
    await waitFor(() => passed(w, ids.at(-1)!), 10_000, 'the cursor past the last change');
    assert.equal(w.stats.handovers, 0);
    assert.equal(w.stats.failures, 0);
    await w.stop();
  });
}
