// The stack's krane supervisor (src/modes/supervisor.ts) with stand-in kranes: a krane that
// lost its Lease is started again, and no start outlives a stop or the stack's close. (The
// whole path with a real krane and a taken Lease: tests/e2e/krane-lease-lost.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { KraneSupervisor } from '../../src/modes/supervisor';
import type { KraneHandle } from '../../src/modes/krane';
import { until } from '../helpers/wait';

interface Fake {
  closed: boolean;
  lose(): void;
}

/** A supervisor whose starts are stand-ins; failNext(n) fails the next n starts, hold(p)
 *  holds each start until p settles; entered() counts the starts begun (held ones too). */
function harness() {
  const made: Fake[] = [];
  const current = new Map<string, KraneHandle>();
  let failures = 0;
  let entered = 0;
  let gate: Promise<void> | undefined;
  const sup = new KraneSupervisor({
    logger: pino({ level: 'silent' }),
    replaced: (region, krane) => void current.set(region, krane),
    start: async (_region, onLostLease) => {
      entered++;
      await gate;
      if (failures > 0) {
        failures--;
        throw new Error('cannot start');
      }
      const f: Fake = { closed: false, lose: () => onLostLease() };
      made.push(f);
      return { close: async () => void (f.closed = true) } as unknown as KraneHandle;
    },
  });
  return { sup, made, current, entered: () => entered, failNext: (n: number) => (failures = n), hold: (p: Promise<void>) => (gate = p) };
}

test('a krane that lost its Lease is started again', async () => {
  const { sup, made, current } = harness();
  await sup.start('r');
  made[0]!.lose();
  await until(() => current.has('r'), { what: 'started again', show: () => ({ made: made.length }) });
  assert.equal(made.length, 2);
  assert.equal(made[0]!.closed, false, 'the lost one closed itself; the supervisor only starts');
  await sup.close();
});

test('a restart whose starts fail is tried again with backoff until one succeeds', async () => {
  const { sup, made, current, failNext } = harness();
  await sup.start('r');
  failNext(2);
  made[0]!.lose();
  await until(() => current.has('r'), { what: 'started again', show: () => ({ made: made.length }) });
  assert.equal(made.length, 2, 'two failed starts, then one krane');
  await sup.close();
});

test('stop during the restart backoff: nothing starts, and settled() does not wait out the backoff', async () => {
  const { sup, made, current } = harness();
  await sup.start('r');
  made[0]!.lose();
  sup.stop('r');
  let settled = false;
  void sup.settled('r').then(() => (settled = true));
  // The stop aborts the backoff's timer: settled() resolves on promise jobs alone, before any
  // timer could fire (a backoff waited out would need one).
  await new Promise((r) => setImmediate(r));
  assert.ok(settled, 'settled() resolved without waiting for a timer');
  // The restart has ended, so nothing can start any more.
  assert.equal(made.length, 1, 'no krane started after the stop');
  assert.equal(current.size, 0);
  await sup.close();
});

test('close while a restart is starting: the new krane is closed, never handed out, and close waits for it', async () => {
  const { sup, made, current, hold, entered } = harness();
  await sup.start('r');
  let open!: () => void;
  hold(new Promise<void>((r) => (open = r)));
  made[0]!.lose();
  await until(() => entered() === 2, { what: 'the restart waiting at the gate', show: () => ({ entered: entered() }) });
  const closing = sup.close();
  open();
  await closing;
  assert.equal(current.size, 0, 'nothing replaced the stopped krane');
  assert.equal(made.length, 2, 'the restart made its krane');
  assert.equal(made[1]!.closed, true, 'a krane started during close was closed');
  await assert.rejects(sup.start('r'), /closing/);
});

test('close while a direct start (a restartKrane) is in progress: it is closed and the start refused', async () => {
  const { sup, made, hold } = harness();
  let open!: () => void;
  hold(new Promise<void>((r) => (open = r)));
  const starting = sup.start('r');
  const closing = sup.close();
  open();
  await assert.rejects(starting, /closing/);
  await closing;
  assert.equal(made.length, 1);
  assert.equal(made[0]!.closed, true, 'the krane started during close did not outlive it');
});
