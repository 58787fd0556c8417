// The one poller (tests/helpers/wait.ts): a wait that runs out fails with what it last saw,
// never sooner than the safety net, whatever call shape the folders' older names use; a hung
// promise fails the same way instead of holding the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';

// A short net for this file only, set before the module reads it.
process.env.UNKEY_INFRA_TEST_SAFETY_NET_MS = '200';
const { until, waitFor, within, SAFETY_NET_MS } = await import('../helpers/wait');

test('until returns the first truthy value; errors and falsy values are "not yet"', async () => {
  let n = 0;
  assert.equal(await until(() => (++n >= 3 ? `at ${n}` : 0), { stepMs: 1 }), 'at 3');
  let m = 0;
  assert.equal(
    await until(() => {
      if (++m < 3) throw new Error('not up');
      return m;
    }, { stepMs: 1 }),
    3,
  );
});

test('a wait that runs out names what it awaited, its last value or error, and the state shown', async () => {
  await assert.rejects(until(() => ({ ok: false }).ok, { what: 'the pod ready', show: () => ({ phase: 'Pending' }) }), /the pod ready not met within 200 ms; last value: false; seen: \{ phase: 'Pending' \}/);
  await assert.rejects(
    until(() => {
      throw new Error('connection refused');
    }, { what: 'the server up' }),
    /the server up not met within 200 ms; last error: connection refused/,
  );
});

test('a shorter deadline given by a caller is raised to the safety net', async () => {
  assert.equal(SAFETY_NET_MS, 200);
  const t0 = Date.now();
  await assert.rejects(until(() => false, 10, 'short'), /short not met within 200 ms/);
  assert.ok(Date.now() - t0 >= 200, 'waited the whole net');
});

test('every older call shape reaches the one implementation', async () => {
  let i = 0;
  assert.equal(await until(() => ++i > 1 && 'fn-first', 1_000, 'what'), 'fn-first');
  assert.equal(await until(() => true, 1_000, 5), true, 'a number third is the step (kube/helpers)');
  assert.equal(await waitFor('what-first', () => 'ok'), 'ok', 'waitFor(what, fn) (kube-sim, engine)');
  assert.equal(await waitFor(() => true, 1_000, 'fn-first waitFor (sync)'), true);
  await assert.rejects(waitFor('named first', () => false), /named first not met/);
});

test('within settles with the promise, and fails a hung one with what it saw', async () => {
  assert.equal(await within(Promise.resolve(7), 'quick'), 7);
  const seen = ['list', 'watch from 16'];
  await assert.rejects(within(new Promise(() => {}), 'the informer stopped', { show: () => seen }), /the informer stopped did not settle within 200 ms; seen: \[ 'list', 'watch from 16' \]/);
});
