// GET /v1/events opened directly with `ws`, against the whole system: the greeting, the events
// of a real deploy in order, the ?deploymentId= and ?type= filters, the ?token= login browsers
// use, refusals without a valid token, and the cut-off of a client that stops reading. If the
// route sent nothing, every test here would fail (the CLI's fallback to polling cannot hide it).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { testStack, until } from '../helpers/stack';
import { events } from '../../src/store';
import { eventConcerns } from '../../src/live-events';
import type { LiveEvent } from '../../src/store/events';

const stack = await testStack({ regions: ['us-east-1'] });
const wsUrl = (query: Record<string, string> = {}) => {
  const u = new URL(`${stack.ctrl.url.replace(/^http/, 'ws')}/v1/events`);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  return u;
};

/** A socket that records every frame; resolves once the server's greeting arrived. */
async function listen(query: Record<string, string> = {}, headers: Record<string, string> = { authorization: `Bearer ${stack.adminToken}` }) {
  const ws = new WebSocket(wsUrl(query), { headers });
  after(() => ws.terminate());
  const frames: (LiveEvent | { type: 'hello' })[] = [];
  ws.on('message', (d) => frames.push(JSON.parse(String(d))));
  await until(() => frames.length > 0, 10_000, 'the greeting');
  assert.deepEqual(frames[0], { type: 'hello' }, 'the first frame is the greeting');
  const seen = () => frames.slice(1) as LiveEvent[];
  return { ws, seen };
}

/** Why a handshake was refused ("Unexpected server response: 401"). */
function refusal(query: Record<string, string>, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(wsUrl(query), { headers });
    ws.on('open', () => resolve('opened'));
    ws.on('error', (err) => resolve(err.message));
  });
}

const deploy = async () => {
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.id as string;
};

const statusOf = (list: LiveEvent[], id: string) => list.flatMap((e) => (e.type === 'deployment.status' && e.deploymentId === id ? [e.status] : []));

test('a deploy streams its statuses in order to ready, and its region progress, to an unfiltered socket', async () => {
  const all = await listen();
  const id = await deploy();
  await until(() => statusOf(all.seen(), id).includes('ready'), 30_000, 'deployment.status ready on the socket');
  const statuses = statusOf(all.seen(), id);
  const order = ['pending', 'building', 'deploying', 'network', 'ready'];
  assert.deepEqual([...statuses].sort((a, b) => order.indexOf(a) - order.indexOf(b)), statuses, `statuses only move forward: ${statuses.join(',')}`);
  assert.ok(statuses.includes('deploying'), statuses.join(','));
  const regions = all.seen().filter((e) => e.type === 'deployment.region' && e.deploymentId === id);
  assert.ok(regions.length > 0, 'deployment.region events');
  assert.ok(regions.some((e) => e.type === 'deployment.region' && e.region === 'us-east-1' && e.running === 1 && e.wanted === 1), JSON.stringify(regions));
});

test('?deploymentId= delivers only that deployment, ?type= only that kind (prefix)', async () => {
  const a = await deploy();
  const b = await deploy();
  const all = await listen();
  const onlyA = await listen({ deploymentId: a });
  const regionOnly = await listen({ type: 'deployment.region' });
  // B changes first and is seen whole on the unfiltered socket, then A: events reach every
  // socket in the one order the hub receives them, so when onlyA has A's change it has
  // already been offered B's, and any leak of B would be in it. The stop's own status is the
  // evidence: a deployment stopped before krane reported its pods sends no region event.
  const stoppedOn = (list: LiveEvent[], id: string) => statusOf(list, id).includes('stopped');
  assert.equal((await stack.api(`/v1/deployments/${b}/stop`, { method: 'POST' })).status, 200);
  await until(() => stoppedOn(all.seen(), b), 30_000, 'B stopped on the unfiltered socket');
  assert.equal((await stack.api(`/v1/deployments/${a}/stop`, { method: 'POST' })).status, 200);
  await until(() => stoppedOn(onlyA.seen(), a), 30_000, 'A stopped on the filtered socket');
  assert.ok(
    // Its own events, and traffic changes that name it among the backends.
    onlyA.seen().every((e) => eventConcerns(e, a)),
    `only A: ${JSON.stringify(onlyA.seen())}`,
  );
  // Kinds other than deployment.region, then a region marker: the type socket must skip them.
  await events.publishEvents(stack.db.sql, [
    { type: 'deployment.status', deploymentId: a, environmentId: 'default', status: 'ready', error: null },
    { type: 'rollout.wave', state: 'in_progress', wave: 0, waves: 1, succeeded: 0, failed: 0 },
    { type: 'deployment.region', deploymentId: 'dep-region-marker', region: 'us-east-1', wanted: 0, running: 0, failed: 0, reason: null },
  ]);
  await until(() => regionOnly.seen().some((e) => e.type === 'deployment.region' && e.deploymentId === 'dep-region-marker'), 10_000, 'the region marker');
  await until(() => all.seen().some((e) => e.type === 'rollout.wave'), 10_000, 'the other kinds on the unfiltered socket');
  assert.ok(
    regionOnly.seen().every((e) => e.type === 'deployment.region'),
    `only deployment.region: ${JSON.stringify(regionOnly.seen().map((e) => e.type))}`,
  );
  // A prefix selects a family: ?type=deployment takes both deployment kinds.
  const family = await listen({ type: 'deployment' });
  await events.publishEvents(stack.db.sql, [
    { type: 'sentinel.status', sentinelId: 'snt-x', region: 'us-east-1', deployStatus: 'READY', health: 'healthy', runningImage: null },
    { type: 'deployment.status', deploymentId: 'dep-marker', environmentId: 'default', status: 'ready', error: null },
  ]);
  await until(() => family.seen().some((e) => e.type === 'deployment.status' && e.deploymentId === 'dep-marker'), 10_000, 'the marker');
  assert.deepEqual(family.seen().filter((e) => e.type === 'sentinel.status'), [], 'the sentinel event published before the marker was filtered out');
});

test('no token or a wrong one is refused with 401; ?token= logs nobody in (issue 26: tokens stay out of URLs)', async () => {
  assert.equal(await refusal({}), 'Unexpected server response: 401');
  assert.equal(await refusal({ token: stack.adminToken }), 'Unexpected server response: 401');
  assert.equal(await refusal({}, { authorization: 'Bearer wrong-token-0123456789' }), 'Unexpected server response: 401');
  // Nor anywhere else in the API.
  const r = await fetch(`${stack.ctrl.url}/v1/deployments?token=${stack.adminToken}`);
  assert.equal(r.status, 401);
});

test('a client that stops reading is cut off (1013 "client too slow") while a reading client gets everything', async () => {
  const fast = await listen({ type: 'deployment.region' });
  const slow = await listen({ type: 'deployment.region' });
  let closed: { code: number; reason: string } | undefined;
  slow.ws.on('close', (code, reason) => (closed = { code, reason: String(reason) }));
  // Listening from the start: a close during the flood is the one to name.
  let fastClosed = 'open';
  fast.ws.on('close', (code, why) => (fastClosed = `closed ${code} ${String(why)}`));
  slow.ws.pause();
  // Near NOTIFY's 8000-byte cap, so 4,000 events (28 MB) outgrow every buffer between ctrl and
  // the paused client (kernel send and receive buffers, then ctrl's 4 MiB hard cap: a reader
  // only behind for a moment is not cut, src/http/api/slow-client.ts).
  const reason = 'x'.repeat(7000);
  const batch = 100;
  const batches = 40;
  for (let i = 0; i < batches; i++) {
    const list: LiveEvent[] = Array.from({ length: batch }, (_, j) => ({ type: 'deployment.region', deploymentId: `dep-flood-${i * batch + j}`, region: 'us-east-1', wanted: 1, running: 0, failed: 0, reason }));
    await events.publishEvents(stack.db.sql, list);
  }
  const total = batch * batches;
  const flood = () => fast.seen().filter((e) => e.type === 'deployment.region' && e.deploymentId.startsWith('dep-flood-')).length;
  await until(() => flood() === total || fastClosed !== 'open', 60_000, 'every event on the reading socket, or its close');
  assert.equal(fastClosed, 'open', `the reading socket stays open (it had ${flood()} of ${total})`);
  slow.ws.resume();
  await until(() => closed, 60_000, 'the slow socket closed by ctrl');
  assert.deepEqual(closed, { code: 1013, reason: 'client too slow' });
  const got = slow.seen().filter((e) => e.type === 'deployment.region' && e.deploymentId.startsWith('dep-flood-')).length;
  assert.ok(got < total, `the slow client was dropped before the end (${got} of ${total})`);
});
