import { test } from 'node:test';
import assert from 'node:assert/strict';
import { comparePositions, encodeCursor, parseCursor } from '../../src/sync/cursor';
import { ciliumState, sentinelState, topologyState } from '../../src/sync/desired';
import { ChangeBuffer } from '../../src/sync/buffer';
import { Dispatcher } from '../../src/sync/dispatcher';
import { DrainClosed, Overlap } from '../../src/sync/overlap';
import { StreamAborted } from '../../src/sync/stream';
import { DesiredState, PermanentError, RESOURCE_TYPES } from '../../src/sync/wire';
import { RESOURCE_TYPES as OUTBOX_RESOURCE_TYPES } from '../../src/store/changes';
import type { TopologyDesiredRow } from '../../src/store/desired-state';
import { RecordingController, silent, sleep } from './helpers';

test('cursor round-trips, canonicalises, and orders by (txid, id) as bigints', () => {
  const c = parseCursor('ep1:00042:007');
  assert.deepEqual(c, { epoch: 'ep1', txid: '42', id: '7' });
  assert.equal(encodeCursor('ep1', c), 'ep1:42:7');
  assert.equal(parseCursor('ep1:18446744073709551615:1').txid, '18446744073709551615');
  for (const bad of ['', 'a', 'a:1', 'a:1:2:3', 'a:-1:2', 'a:1:x', 'a b:1:2', 'a:18446744073709551616:1', 'a:1:9223372036854775808']) {
    assert.throws(() => parseCursor(bad), (e: any) => e.status === 400 && e.code === 'ERR_FEED_CURSOR_INVALID', bad);
  }
  const table: [string, string, string, string, number][] = [
    ['9', '1', '10', '0', -1], // numeric, not string, order
    ['10', '5', '10', '5', 0],
    ['10', '6', '10', '5', 1],
    ['18446744073709551615', '1', '18446744073709551614', '9', 1],
  ];
  for (const [at, ai, bt, bi, want] of table) assert.equal(Math.sign(comparePositions({ txid: at, id: ai }, { txid: bt, id: bi })), want);
});

test('desired-state mapping', () => {
  const row: TopologyDesiredRow = {
    deploymentId: 'dep-a', region: 'us-east-1', workspaceId: 'w', projectId: 'p', appId: 'a', environmentId: 'e',
    image: 'nginx:1', replicas: 3, cpuMillicores: 100, memoryMib: 64, port: 80, command: ['x'], env: { K: 'V' }, desiredStatus: 'running',
  };
  const cases: [string, Partial<TopologyDesiredRow>, 'apply' | 'delete'][] = [
    ['running with image', {}, 'apply'],
    ['stopped', { desiredStatus: 'stopped' }, 'delete'],
    ['still building (no image)', { image: null }, 'delete'],
  ];
  for (const [name, patch, action] of cases) {
    const s = topologyState({ ...row, ...patch });
    assert.equal(s.action, action, name);
    assert.ok(DesiredState.safeParse(s).success, name);
  }
  const s = topologyState(row);
  assert.ok(s.action === 'apply' && s.kind === 'deployment' && s.namespace === 'unkey' && s.replicas === 3 && s.env.K === 'V');
  const sen = sentinelState({ id: 's', region: 'r', workspaceId: 'w', projectId: 'p', appId: 'a', environmentId: 'e', image: 'i', replicas: 1, cpuMillicores: 1, memoryMib: 1, desiredState: 'running' });
  assert.ok(sen.action === 'apply' && sen.kind === 'sentinel' && sen.namespace === 'sentinel');
  assert.equal(sentinelState({ id: 's', region: 'r', workspaceId: 'w', projectId: 'p', appId: 'a', environmentId: 'e', image: 'i', replicas: 1, cpuMillicores: 1, memoryMib: 1, desiredState: 'stopped' }).action, 'delete');
  const cnp = ciliumState({ id: 'c', region: 'r', workspaceId: 'w', projectId: 'p', appId: 'a', environmentId: 'e', desiredState: 'running' });
  assert.ok(cnp.action === 'apply' && cnp.kind === 'cilium_network_policy' && cnp.namespace === 'sentinel');
});

test('change buffer: per-region reads after a position, bounded, floor moves with eviction', () => {
  const b = new ChangeBuffer(4, { txid: '1', id: '0' });
  const row = (t: number, i: number, region: string) => ({ txid: String(t), id: String(i), region, resourceType: 'sentinel' as const, resourceId: `s${i}` });
  assert.deepEqual([...b.append([row(5, 1, 'a'), row(5, 2, 'b'), row(6, 3, 'a')])].sort(), ['a', 'b']);
  assert.deepEqual(b.since('a', { txid: '5', id: '1' }, 100).entries.map((e) => e.id), ['3']);
  assert.deepEqual(b.since('a', { txid: '1', id: '0' }, 1), { entries: [b.since('a', { txid: '1', id: '0' }, 100).entries[0]!], upTo: { txid: '5', id: '1' } });
  assert.deepEqual(b.since('zzz', { txid: '1', id: '0' }, 100), { entries: [], upTo: { txid: '6', id: '3' } });
  b.append([row(7, 4, 'b'), row(8, 5, 'a')]);
  assert.equal(b.size, 4);
  assert.deepEqual(b.floor, { txid: '5', id: '1' }, 'the evicted entry becomes the floor');
  assert.deepEqual(b.since('a', b.floor, 100).entries.map((e) => e.id), ['3', '5']);
});

test('dispatcher: one event at a time per resource, different resources concurrently up to the bound, newest waiting state wins', async () => {
  const ctrl = new RecordingController();
  let running = 0;
  let peak = 0;
  const perResource = new Map<string, number>();
  let perResourcePeak = 0;
  ctrl.hook = async (_op, ref) => {
    running++;
    peak = Math.max(peak, running);
    perResource.set(ref.id, (perResource.get(ref.id) ?? 0) + 1);
    perResourcePeak = Math.max(perResourcePeak, perResource.get(ref.id)!);
    await sleep(15);
    perResource.set(ref.id, perResource.get(ref.id)! - 1);
    running--;
  };
  const d = new Dispatcher({ controller: ctrl, concurrency: 3, logger: silent, retries: 0, retryDelayMs: 1 });
  const apply = (id: string, replicas: number) => ({
    action: 'apply' as const, kind: 'sentinel' as const, sentinelId: id, workspaceId: 'w', projectId: 'p', appId: 'a', environmentId: 'e',
    region: 'r', namespace: 'sentinel', image: 'i', replicas, cpuMillicores: 1, memoryMib: 1, specHash: 'h',
  });
  const jobs: Promise<void>[] = [];
  for (let r = 1; r <= 4; r++) for (const id of ['a', 'b', 'c', 'd', 'e', 'f']) jobs.push(d.submit({ type: 'sentinel', id, region: 'r' }, apply(id, r)));
  await Promise.all(jobs);
  assert.equal(peak, 3, 'bounded concurrency across resources');
  assert.equal(perResourcePeak, 1, 'never two calls for one resource at once');
  for (const id of ['a', 'b', 'c', 'd', 'e', 'f']) {
    const calls = ctrl.calls.filter((c) => c.key === `sentinel/${id}`);
    // First event runs, the three that queued behind it collapse into the newest.
    assert.deepEqual(calls.map((c) => (c.state as any).replicas), [1, 4], id);
  }
  assert.equal(d.backlog, 0);
});

test('dispatcher: transient errors retry then reject; permanent ones are reported and resolve', async () => {
  const ctrl = new RecordingController();
  let attempts = 0;
  ctrl.hook = (_op, ref) => {
    if (ref.id === 'flaky') {
      attempts++;
      throw new Error('down');
    }
    if (ref.id === 'bad') throw new PermanentError('422');
  };
  const reported: string[] = [];
  const d = new Dispatcher({ controller: ctrl, concurrency: 2, logger: silent, retries: 2, retryDelayMs: 1, onPermanentFailure: (r) => void reported.push(r.id) });
  await assert.rejects(d.submit({ type: 'sentinel', id: 'flaky', region: 'r' }, { action: 'delete' }), /down/);
  assert.equal(attempts, 3);
  await d.submit({ type: 'sentinel', id: 'bad', region: 'r' }, { action: 'delete' });
  assert.deepEqual(reported, ['bad']);
});

test('only store/changes.ts inserts into deployment_changes, and only the desired-state stores call it', async () => {
  const { readdirSync, readFileSync, statSync } = await import('node:fs');
  const { join } = await import('node:path');
  const files: string[] = [];
  const walk = (d: string) => {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts') || p.endsWith('.sql')) files.push(p);
    }
  };
  const root = join(import.meta.dirname, '..', '..');
  walk(join(root, 'src'));
  walk(join(root, 'sql'));
  const inserting = files.filter((f) => /INSERT\s+INTO\s+deployment_changes/i.test(readFileSync(f, 'utf8'))).map((f) => f.slice(root.length + 1));
  assert.deepEqual(inserting, ['src/store/changes.ts']);
  const callers = files.filter((f) => /\brecordChange\(/.test(readFileSync(f, 'utf8'))).map((f) => f.slice(root.length + 1)).sort();
  assert.deepEqual(callers, ['src/store/changes.ts', 'src/store/cilium.ts', 'src/store/routes.ts', 'src/store/sentinels.ts', 'src/store/topology.ts']);
});

test('the outbox column and the wire name the same resource types', () => {
  assert.deepEqual([...OUTBOX_RESOURCE_TYPES].sort(), [...RESOURCE_TYPES].sort());
});

test('a handed-over poll is closed with DrainClosed, a reason without stack frames to map', () => {
  const o = new Overlap(silent);
  const ac = new AbortController();
  o.begin(ac);
  o.end();
  assert.ok(ac.signal.aborted);
  assert.ok(ac.signal.reason instanceof DrainClosed);
  assert.deepEqual((ac.signal.reason as Error).stack!.split('\n').slice(1), [], 'no frames');
  assert.ok(new Error('x').stack!.split('\n').length > 1, 'other errors keep theirs');
});

test('StreamAborted (one per poll an agent closes) is made without stack frames, its message intact', () => {
  const e = new StreamAborted('client went away');
  assert.ok(e instanceof Error);
  assert.equal(e.message, 'client went away');
  assert.deepEqual(e.stack!.split('\n').slice(1), [], 'no frames');
  assert.ok(new Error('x').stack!.split('\n').length > 1, 'other errors keep theirs');
});

test('CursorTracker commits in stream order past handled events only, and settled() waits for every job', async () => {
  const { CursorTracker } = await import('../../src/sync/cursor-tracker');
  const committed: string[] = [];
  const failures: unknown[] = [];
  const t = new CursorTracker((c) => committed.push(c), (e) => failures.push(e));
  const jobs = ['a', 'b', 'c', 'd'].map(() => {
    let resolve!: () => void, reject!: (e: unknown) => void;
    const p = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    return { p, resolve, reject };
  });
  jobs.forEach((j, i) => t.add('abcd'[i]!, j.p));
  jobs[1]!.resolve();
  await Promise.resolve();
  assert.deepEqual(committed, [], 'b is done but a is not: nothing committed');
  jobs[0]!.resolve();
  let settled = false;
  const s = t.settled().then(() => (settled = true));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(committed, ['a', 'b']);
  assert.equal(settled, false, 'c and d still running');
  const boom = new Error('handler failed');
  jobs[2]!.reject(boom);
  jobs[3]!.resolve();
  await s;
  assert.deepEqual(committed, ['a', 'b'], 'never past the failed c');
  assert.deepEqual(failures, [boom]);
});
