// The tailer's push (src/sync/fanout.ts): new changes written straight into waiting streams'
// sockets. What a push sends must be exactly what the stream's own read would have sent, once,
// in order; a waiter it cannot serve is woken to read for itself. Pure: a ChangeBuffer and
// waiters standing in for streams.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChangeBuffer } from '../../src/sync/buffer';
import { pushToWaiters, type PushTarget, type Waiter, type WakeReason } from '../../src/sync/fanout';
import type { Position } from '../../src/store/changes';

const row = (t: number, i: number, region: string, resourceId = `s${i}`) => ({ txid: String(t), id: String(i), region, resourceType: 'sentinel' as const, resourceId });

/** A waiting stream: what it was pushed, and how its wait ended. */
function waiter(pos: Position, opts: { full?: boolean; noTarget?: boolean } = {}) {
  const pushed: string[] = [];
  const chunks: Uint8Array[] = [];
  let ended: WakeReason | null = null;
  const target: PushTarget = {
    pos,
    lastWrite: 0,
    push(chunk) {
      chunks.push(chunk);
      pushed.push(new TextDecoder('utf-8', { fatal: true }).decode(chunk));
      return !opts.full;
    },
  };
  const w: Waiter & { pushed: string[]; chunks: Uint8Array[]; ended: () => WakeReason | null } = {
    target: opts.noTarget ? undefined : target,
    finished: false,
    finish(r) {
      if (this.finished) return;
      (this as { finished: boolean }).finished = true;
      ended = r;
    },
    pushed,
    chunks,
    ended: () => ended,
  };
  return w;
}

/** Lines as the tailer builds them (one per entry), counting the builds. */
function lineBuilder() {
  const calls: string[][] = [];
  return {
    calls,
    lines: async (entries: { id: string; resourceId: string }[]) => {
      calls.push(entries.map((e) => e.id));
      return entries.map((e) => `{"id":"${e.id}","resource":"${e.resourceId}"}`);
    },
  };
}

test('a push sends each waiter what its own read would, once; waiters at one position share one chunk', async () => {
  const b = new ChangeBuffer(100, { txid: '1', id: '0' });
  b.append([row(2, 1, 'a'), row(2, 2, 'b')]);
  const head = b.head;
  const atHead = [waiter(head), waiter(head)];
  const behind = waiter({ txid: '1', id: '0' }); // has not seen entry 1 yet
  b.append([row(3, 3, 'a'), row(3, 4, 'a', 's3')]); // two changes of one resource: coalesced
  const l = lineBuilder();
  await pushToWaiters(b, 'a', [...atHead, behind], l.lines);
  for (const w of atHead) {
    assert.deepEqual(w.pushed, ['{"id":"4","resource":"s3"}\n'], 'the last state of s3 only');
    assert.deepEqual(w.target!.pos, b.head);
    assert.equal(w.finished, false, 'it goes on waiting');
  }
  assert.deepEqual(behind.pushed, ['{"id":"1","resource":"s1"}\n{"id":"4","resource":"s3"}\n']);
  assert.deepEqual(l.calls, [['4'], ['1', '4']], 'one build per group');
  assert.equal(atHead[0]!.chunks[0], atHead[1]!.chunks[0], 'one encoded chunk per group, not one per socket');
  // Pushed again with nothing new: nothing is sent twice, and one that has all is sent nothing.
  const other = waiter(b.head);
  await pushToWaiters(b, 'a', [...atHead, behind, other], l.lines);
  assert.deepEqual([...atHead, behind].map((w) => w.pushed.length), [1, 1, 1]);
  assert.deepEqual(other.pushed, []);
  assert.deepEqual(other.target!.pos, b.head);
});

test('a waiter whose socket must drain is woken with drain; one behind the buffer, or lending no socket, is woken to read itself', async () => {
  const b = new ChangeBuffer(2, { txid: '1', id: '0' });
  b.append([row(2, 1, 'a')]);
  const full = waiter(b.head, { full: true });
  const plain = waiter(b.head, { noTarget: true });
  const evicted = waiter({ txid: '1', id: '0' });
  b.append([row(3, 2, 'a'), row(4, 3, 'a')]); // entry 1 leaves: the floor passes `evicted`
  await pushToWaiters(b, 'a', [full, plain, evicted], lineBuilder().lines);
  assert.equal(full.ended(), 'drain');
  assert.equal(full.pushed.length, 1, 'what was written stays written');
  assert.deepEqual(full.target!.pos, b.head, 'and its position moved past it');
  assert.equal(plain.ended(), 'change');
  assert.equal(evicted.ended(), 'change');
  assert.deepEqual(evicted.pushed, []);
});

test('a waiter woken while the lines load is not pushed to: its stream reads from where it is', async () => {
  const b = new ChangeBuffer(100, { txid: '1', id: '0' });
  const w = waiter(b.head);
  const before = { ...w.target!.pos };
  b.append([row(2, 1, 'a')]);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const pushing = pushToWaiters(b, 'a', [w], async (entries) => {
    await gate;
    return entries.map((e) => e.id);
  });
  w.finish('timeout');
  release();
  await pushing;
  assert.deepEqual(w.pushed, []);
  assert.deepEqual(w.target!.pos, before);
});

test('lines that fail to load wake the group to read for itself', async () => {
  const b = new ChangeBuffer(100, { txid: '1', id: '0' });
  const w = waiter(b.head);
  b.append([row(2, 1, 'a')]);
  await pushToWaiters(b, 'a', [w], async () => {
    throw new Error('database away');
  });
  assert.equal(w.ended(), 'change');
  assert.deepEqual(w.pushed, []);
});

test('a burst over one page of a region is pushed whole, page by page, in order; a socket that fills stops at its page', async () => {
  const b = new ChangeBuffer(10_000, { txid: '1', id: '0' });
  const start = b.head;
  const a = [waiter(start), waiter(start)];
  const full = waiter(start, { full: true });
  // 2,500 rows of one region in one append (one big transaction): two full pages and a half.
  b.append(Array.from({ length: 2500 }, (_, i) => row(2, i + 1, 'a')));
  const l = lineBuilder();
  await pushToWaiters(b, 'a', [...a, full], l.lines);
  const ids = (w: ReturnType<typeof waiter>) => w.pushed.join('').split('\n').filter(Boolean).map((s) => Number(JSON.parse(s).id));
  const all = Array.from({ length: 2500 }, (_, i) => i + 1);
  for (const w of a) {
    assert.deepEqual(ids(w), all, 'every row once, in order');
    assert.deepEqual(w.target!.pos, b.head, 'at the head');
    assert.equal(w.finished, false, 'it goes on waiting');
  }
  assert.ok(l.calls.length > 0 && l.calls.every((c) => c.length <= 1000), 'no push larger than a page');
  // The one whose socket filled got the first page and was woken to drain, with its position
  // at the end of what it was sent, so its own read sends the rest.
  assert.deepEqual(ids(full), all.slice(0, 1000));
  assert.equal(full.ended(), 'drain');
  assert.deepEqual(full.target!.pos, { txid: '2', id: '1000' });
});

test('a pushed chunk is the lines in UTF-8, characters outside ASCII included', async () => {
  const b = new ChangeBuffer(100, { txid: '1', id: '0' });
  const w = waiter(b.head);
  b.append([row(2, 1, 'a', 'é-€-😀')]);
  await pushToWaiters(b, 'a', [w], lineBuilder().lines);
  assert.deepEqual(w.pushed, ['{"id":"1","resource":"é-€-😀"}\n']);
  assert.equal(w.chunks[0]!.length, Buffer.byteLength(w.pushed[0]!, 'utf8'));
});

test('waiters at equal positions get one chunk whether or not they hold the same position object, push after push', async () => {
  const b = new ChangeBuffer(100, { txid: '1', id: '0' });
  b.append([row(2, 1, 'a')]);
  const p = b.head;
  const ws = [waiter(p), waiter(p), waiter({ ...p }), waiter({ txid: '1', id: '0' })];
  const l = lineBuilder();
  for (let i = 0; i < 3; i++) {
    b.append([row(3 + i, 2 + i, 'a')]);
    await pushToWaiters(b, 'a', ws, l.lines);
    const chunks = ws.slice(0, 3).map((w) => w.chunks[i]);
    assert.ok(chunks[0] && chunks.every((c) => c === chunks[0]), `push ${i}: one chunk for the three at the head`);
    assert.deepEqual(ws[0]!.pushed[i], `{"id":"${2 + i}","resource":"s${2 + i}"}\n`);
    for (const w of ws) assert.deepEqual(w.target!.pos, b.head);
  }
  assert.deepEqual(ws[3]!.pushed, ['{"id":"1","resource":"s1"}\n{"id":"2","resource":"s2"}\n', '{"id":"3","resource":"s3"}\n', '{"id":"4","resource":"s4"}\n']);
  assert.deepEqual(l.calls, [['2'], ['1', '2'], ['3'], ['4']], 'one build per group; once all four are at one position, one in all');
});
