import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { testDb } from '../helpers/db';
import { upsertTopology, setTopologyStatus } from '../../src/store/topology';
import { ensureSentinel, updateSentinelDesired } from '../../src/store/sentinels';
import { ensureCiliumPolicy, setCiliumPolicyState } from '../../src/store/cilium';
import { rotateFeedEpoch } from '../../src/store/system';
import { Watcher } from '../../src/sync/watcher';
import { StreamLine } from '../../src/sync/wire';
import { RecordingController, TOKENS, deployTo, newDeployment, readFeed, silent, sleep, startFeedServer, waitFor } from './helpers';

const db = await testDb({ isolated: true });
const server = await startFeedServer(db.url, { waitLimitMs: 1_500, heartbeatMs: 300 });
after(() => server.close());

const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };

/** Reads an NDJSON response line by line as it arrives. */
async function* linesOf(res: Response): AsyncGenerator<any> {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line) yield JSON.parse(line);
    }
  }
}

test('full sync lists every resource of the region, then incremental changes, heartbeats and end', async () => {
  const a = await deployTo(db.sql, 'us-east-1', 2);
  const stopped = await deployTo(db.sql, 'us-east-1');
  await setTopologyStatus(db.sql, stopped, 'stopped');
  await deployTo(db.sql, 'eu-west-1');
  const { sentinel } = await ensureSentinel(db.sql, { ...scope, id: 'snt-a', region: 'us-east-1', image: 'sentinel:1', replicas: 2, cpuMillicores: 250, memoryMib: 256 });
  await ensureCiliumPolicy(db.sql, { ...scope, id: 'cnp-a', region: 'us-east-1' });

  // A wait limit far beyond the test: the response ends when the server closes, so nothing
  // here depends on how fast the machine is.
  const long = await startFeedServer(db.url, { waitLimitMs: 120_000, heartbeatMs: 300 });
  let closed = false;
  after(() => (closed ? undefined : long.close()));
  const res = await fetch(`${long.url}/v1/cluster/changes?wait=120`, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` } });
  assert.equal(res.status, 200);
  const lines: any[] = [];
  let laterId = '';
  const want = () =>
    laterId !== '' &&
    lines.some((l) => l.type === 'change' && l.resource.id === laterId) &&
    lines.some((l) => l.type === 'change' && l.resource.id === 'snt-a' && l.state.image === 'sentinel:2') &&
    lines.some((l) => l.type === 'change' && l.resource.id === 'cnp-a' && l.state.action === 'delete') &&
    lines.findLastIndex((l) => l.type === 'heartbeat') > lines.findIndex((l) => l.type === 'snapshot_end');
  for await (const l of linesOf(res)) {
    lines.push(l);
    if (l.type === 'snapshot_end') {
      // Changes committed while the poll is open arrive in the same response.
      await updateSentinelDesired(db.sql, 'snt-a', { image: 'sentinel:2', replicas: 2, cpuMillicores: 250, memoryMib: 256, desiredState: 'running' }, 'progressing');
      await setCiliumPolicyState(db.sql, 'cnp-a', 'stopped');
      laterId = await deployTo(db.sql, 'us-east-1', 3);
    }
    if (want() && !closed) {
      // Closing the feed ends every open stream with its `end` line.
      closed = true;
      void long.close();
    }
  }
  for (const l of lines) assert.ok(StreamLine.safeParse(l).success, JSON.stringify(l));
  assert.equal(lines[0].type, 'snapshot_begin');
  const endIdx = lines.findIndex((l) => l.type === 'snapshot_end');
  const snap = lines.slice(1, endIdx);
  assert.equal(lines[endIdx].count, 4);
  const byId = new Map(snap.map((l) => [l.resource.id, l]));
  assert.equal(byId.get(a).state.action, 'apply');
  assert.equal(byId.get(a).state.replicas, 2);
  assert.equal(byId.get(a).state.namespace, 'unkey');
  assert.equal(byId.get(stopped).state.action, 'delete');
  assert.equal(byId.get(sentinel.id).state.kind, 'sentinel');
  assert.equal(byId.get(sentinel.id).state.namespace, 'sentinel');
  assert.equal(byId.get('cnp-a').state.kind, 'cilium_network_policy');
  assertEvery(snap, (l) => l.resource.region === 'us-east-1', 'no other region in the snapshot');
  const rest = lines.slice(endIdx + 1);
  // Rows not yet settled when the snapshot was taken (another database's open transaction can
  // hold back the cluster-wide xmin) come again after snapshot_end: harmless duplicates.
  const change = rest.find((l) => l.type === 'change' && l.resource.id === laterId);
  assert.ok(change, 'the change committed during the poll arrives in the same response');
  assert.equal(change.state.replicas, 3);
  const sentinelChange = rest.find((l) => l.type === 'change' && l.resource.id === 'snt-a' && l.state.image === 'sentinel:2');
  assert.ok(sentinelChange, 'sentinel update delivered incrementally with its new image');
  assert.ok(rest.some((l) => l.type === 'change' && l.resource.id === 'cnp-a' && l.state.action === 'delete'), 'stopped cilium policy delivered as delete');
  assert.match(change.cursor, /^[A-Za-z0-9_-]+:\d+:\d+$/);
  assert.ok(rest.some((l) => l.type === 'heartbeat'), 'heartbeats while idle');
  assert.equal(rest.at(-1).type, 'end');

  // Resuming from the end cursor sends nothing old.
  const again = await readFeed(server.url, TOKENS['us-east-1'], { cursor: rest.at(-1).cursor, wait: '0.3' });
  assert.equal(again.status, 200);
  assert.deepEqual(again.lines.filter((l) => l.type === 'change'), []);
  assert.equal(again.lines.at(-1).type, 'end');
});

test('out-of-order commit: B waits for A, then both arrive, without a resync', async () => {
  const ctrl = new RecordingController();
  const w = new Watcher({ controlPlaneUrl: server.url, token: TOKENS['eu-west-1'], region: 'eu-west-1', controller: ctrl, logger: silent, backoffMinMs: 50, backoffMaxMs: 100 });
  w.start();
  try {
    await waitFor(() => w.stats.snapshotsCompleted === 1, 5_000, 'first snapshot');
    const depA = await newDeployment(db.sql, { regions: ['eu-west-1'] });
    const depB = await newDeployment(db.sql, { regions: ['eu-west-1'] });
    let releaseA!: () => void;
    const gate = new Promise<void>((r) => (releaseA = r));
    let aWritten!: () => void;
    const written = new Promise<void>((r) => (aWritten = r));
    // A writes first (so it holds the older txid) and stays open.
    const txA = db.sql.begin(async (tx) => {
      await upsertTopology(tx, { deploymentId: depA, region: 'eu-west-1', workspaceId: 'default', replicas: 1 });
      aWritten();
      await gate;
    });
    await written;
    await upsertTopology(db.sql, { deploymentId: depB, region: 'eu-west-1', workspaceId: 'default', replicas: 1 });
    // B is committed; a pk > cursor reader would deliver it now and later skip A. Evidence
    // that B is held back, not just slow: the tailer has looked at the outbox several times
    // since B committed, and the watcher has opened a new poll since, without B.
    const polls0 = server.feed.tailer.polls;
    const watcherStreams0 = w.stats.streams;
    await waitFor(() => server.feed.tailer.polls >= polls0 + 5 && w.stats.streams >= watcherStreams0 + 1, 20_000, 'the tailer and the watcher moved on');
    assert.equal(ctrl.applied(`deployment_topology/${depB}`), undefined, 'B must wait while the older A is open');
    releaseA();
    await txA;
    await waitFor(() => !!ctrl.applied(`deployment_topology/${depA}`) && !!ctrl.applied(`deployment_topology/${depB}`), 5_000, 'A and B');
    assert.equal(w.stats.snapshotsStarted, 1, 'no resync was needed');
  } finally {
    await w.stop();
  }
});

test('a cursor from another epoch gets 410 and the watcher falls back to a full sync', async () => {
  const ctrl = new RecordingController();
  const w = new Watcher({ controlPlaneUrl: server.url, token: TOKENS['us-east-1'], region: 'us-east-1', controller: ctrl, logger: silent, backoffMinMs: 20, backoffMaxMs: 40, waitSeconds: 0.3 });
  w.start();
  try {
    await waitFor(() => w.stats.snapshotsCompleted === 1, 5_000, 'first snapshot');
    const old = w.cursor!;
    await rotateFeedEpoch(db.sql);
    // The tailer notices the rotation within a poll; until then the old epoch is still served
    // (200), never anything else.
    const r = await readFeed(server.url, TOKENS['us-east-1'], { cursor: old, wait: '0.1' });
    assert.ok([200, 410].includes(r.status), `${r.status}`);
    await waitFor(async () => (await readFeed(server.url, TOKENS['us-east-1'], { cursor: old, wait: '0.1' })).status === 410, 5_000, '410');
    await waitFor(() => w.stats.snapshotsCompleted >= 2, 5_000, 'full sync after 410');
    assert.ok(w.stats.resets >= 1);
    assert.notEqual(w.cursor!.split(':')[0], old.split(':')[0], 'new cursor is of the new epoch');
  } finally {
    await w.stop();
  }
});

test('close() ends open streams with an end line', async () => {
  const s2 = await startFeedServer(db.url, { waitLimitMs: 30_000 });
  const res = await fetch(`${s2.url}/v1/cluster/changes?wait=30`, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` } });
  const lines: any[] = [];
  for await (const l of linesOf(res)) {
    lines.push(l);
    // The stream is open and past its snapshot: close the server under it.
    if (l.type === 'snapshot_end') void s2.close();
  }
  assert.equal(lines.at(-1).type, 'end');
});
