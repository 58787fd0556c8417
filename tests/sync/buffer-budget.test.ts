// The tailer's buffer is bounded by bytes as well as entries: one deployment with a large env
// changed over and over must not grow ctrl's heap by its size times the entry limit. And the
// snapshot queue is fair between regions and bounded per region (pure parts, no database).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChangeBuffer } from '../../src/sync/buffer';
import { FairSlots } from '../../src/sync/slots';

const row = (n: number, region = 'r1') => ({ id: String(n), txid: String(100 + n), resourceType: 'deployment_topology' as const, resourceId: `dep-${n}`, region });

test('entries past the byte budget leave from the front and move the floor; late or evicted weights are not counted', () => {
  const b = new ChangeBuffer(1_000, { txid: '100', id: '0' }, 10_000);
  b.append([1, 2, 3, 4].map((n) => row(n)));
  const [e1, e2, e3, e4] = b.since('r1', { txid: '100', id: '0' }, 10).entries;
  b.account(e1!, 4_000);
  b.account(e2!, 4_000);
  assert.equal(b.size, 4);
  assert.equal(b.bytes, 8_000);
  // The third heavy line tips the budget: the oldest entry goes, and the floor follows it.
  b.account(e3!, 4_000);
  assert.equal(b.size, 3);
  assert.equal(b.bytes, 8_000);
  assert.deepEqual(b.floor, { txid: '101', id: '1' });
  assert.equal(e1!.evicted, true);
  // An evicted entry's line resolving late, or an entry weighed twice, changes nothing.
  b.account(e1!, 4_000);
  b.account(e2!, 4_000);
  assert.equal(b.bytes, 8_000);
  // One line heavier than the whole budget empties the buffer rather than holding it.
  b.account(e4!, 50_000);
  assert.equal(b.size, 0);
  assert.equal(b.bytes, 0);
  assert.deepEqual(b.floor, { txid: '104', id: '4' });
  assert.deepEqual(b.head, { txid: '104', id: '4' });
});

test('a reset forgets the weights: lines of the old epoch resolving later are not counted', () => {
  const b = new ChangeBuffer(1_000, { txid: '100', id: '0' }, 10_000);
  b.append([row(1)]);
  const [e] = b.since('r1', { txid: '100', id: '0' }, 10).entries;
  b.reset({ txid: '200', id: '0' });
  b.account(e!, 4_000);
  assert.equal(b.bytes, 0);
});

test('snapshot slots: a full region queue is refused at once (503), other regions queue, and freed slots alternate between regions', async () => {
  const slots = new FairSlots(1, 2, 60_000);
  const first = await slots.acquire('a');
  const order: string[] = [];
  const wait = (key: string, tag: string) => slots.acquire(key).then((release) => (order.push(tag), release));
  const a1 = wait('a', 'a1');
  const a2 = wait('a', 'a2');
  await assert.rejects(slots.acquire('a'), (err: { code?: string }) => err.code === 'ERR_FEED_SYNC_BUSY');
  const b1 = wait('b', 'b1');
  assert.equal(slots.queued, 3);
  first();
  (await a1)();
  (await b1)();
  (await a2)();
  assert.deepEqual(order, ['a1', 'b1', 'a2']);
  assert.equal(slots.queued, 0);
});

test('snapshot slots: a waiter that gives up leaves the queue, and a wait that lasts too long is refused', async () => {
  const slots = new FairSlots(1, 4, 50);
  const held = await slots.acquire('a');
  const gone = new AbortController();
  const leaving = slots.acquire('a', gone.signal);
  gone.abort(new Error('client went away'));
  await assert.rejects(leaving, /client went away/);
  await assert.rejects(slots.acquire('b'), (err: { code?: string }) => err.code === 'ERR_FEED_SYNC_BUSY');
  assert.equal(slots.queued, 0);
  held();
  (await slots.acquire('a'))();
});
