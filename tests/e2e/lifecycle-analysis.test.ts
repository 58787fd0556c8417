// The analysis of a canary or blue-green, judged over the whole deployment (issue 23): failed
// Prometheus checks count across every step (and blue-green's whole window), reaching
// `failureLimit` rolls back at once, a failing check is never a pass, a step whose instances are
// not ready when it ends fails, and blue-green keeps blue when traffic came back to it. The
// Prometheus is a stand-in the test scripts (tests/helpers/prometheus-stand-in.ts), so "every check
// fails" means exactly that. Each test brings its own stable deployment.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentsOf } from '../helpers/stack';
import { startStandInPrometheus } from '../helpers/prometheus-stand-in';
import { KubeClient } from '../../src/kube/client';

// 300 ms to Ready, so a `slow` pod (10×) stays unready for 3 s: long enough to outlast a step.
const stack = await testStack({ readyDelayMs: 300, ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
const BOTH = ['us-east-1', 'eu-west-1'];
const { create, status } = deploymentsOf(stack, BOTH);
const prom = await startStandInPrometheus(0.01);
after(() => prom.close());
const gate = (o: { interval: string; failureLimit: number }) => ({ ...o, prometheus: { url: prom.url, query: 'error_rate', max: 0.05 } });

const table = async () => ((await stack.api('/v1/environments/default/traffic')).body?.backends ?? []) as { deploymentId: string; weight: number }[];

/** Records the highest weight `id` gets in the environment's table until stopped. */
function watchWeight(id: string) {
  let max = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      max = Math.max(max, ...(await table()).filter((b) => b.deploymentId === id).map((b) => b.weight));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return { stop: async () => ((stopped = true), await loop, max) };
}

async function freshStable(): Promise<string> {
  prom.set(0.01);
  const id = await create();
  await status(id, ['ready']);
  await until(async () => JSON.stringify(await table()) === JSON.stringify([{ deploymentId: id, weight: 100 }]), 15_000, 'stable serving');
  return id;
}

test('every check failing: failureLimit counts over all steps and rolls back at once, never promoting', async () => {
  const stable = await freshStable();
  prom.set(0.9);
  const canary = await create({ type: 'canary', steps: [20, 40, 60].map((weight) => ({ weight, pause: '1s' })), analysis: gate({ interval: '1s', failureLimit: 3 }) });
  const w = watchWeight(canary);
  const done = await status(canary, ['ready', 'rolled_back', 'failed'], 30_000);
  const max = await w.stop();
  assert.equal(done.status, 'rolled_back', `ended ${done.status}: ${done.error}`);
  assert.match(done.error, /analysis failed: 0\.9 is above the maximum 0\.05 \(3 of failureLimit 3 checks failed\)/);
  assert.ok(max <= 20, `the canary reached ${max}%: a failing check let a step pass`);
  assert.deepEqual(await table(), [{ deploymentId: stable, weight: 100 }]);
  assert.equal((await stack.api(`/v1/deployments/${stable}`)).body.status, 'ready', 'the stable was never stopped');
});

test('failed checks add up across steps: one in each of two steps reaches failureLimit 2', async () => {
  const stable = await freshStable();
  // Step 1: fail, then pass (the step may end); step 2: fail, the second failure of the analysis.
  prom.script([0.9, 0.01, 0.9]);
  const canary = await create({ type: 'canary', steps: [{ weight: 10, pause: '1s' }, { weight: 30, pause: '5s' }], analysis: gate({ interval: '1s', failureLimit: 2 }) });
  const done = await status(canary, ['ready', 'rolled_back', 'failed'], 30_000);
  assert.equal(done.status, 'rolled_back', `ended ${done.status}: ${done.error}`);
  assert.match(done.error, /analysis failed: .* \(2 of failureLimit 2 checks failed\)/);
  assert.deepEqual(await table(), [{ deploymentId: stable, weight: 100 }]);
});

test('failureLimit above 1: fewer failed checks than the limit, then passing ones, let the canary through', async () => {
  await freshStable();
  prom.script([0.9, 0.9, 0.01]);
  const canary = await create({ type: 'canary', steps: [{ weight: 25, pause: '1500ms' }], analysis: gate({ interval: '500ms', failureLimit: 3 }) });
  const done = await status(canary, ['ready', 'rolled_back', 'failed'], 30_000);
  assert.equal(done.status, 'ready', done.error);
  assert.ok(prom.queries() >= 3, 'both failures and a pass were seen');
  assert.deepEqual(await table(), [{ deploymentId: canary, weight: 100 }]);
});

test('a step whose instances are not ready when it ends rolls back, naming the region', async () => {
  const stable = await freshStable();
  const canary = await create({ type: 'canary', steps: [{ weight: 10, pause: '5s' }, { weight: 50, pause: '60s' }] });
  await until(async () => (await table()).some((b) => b.deploymentId === canary && b.weight === 10), 30_000, 'canary at 10%');
  // The pod comes back held by the simulator (not Ready until released), so the step's end
  // finds eu-west-1 at 0/1 however long the step's end takes to come.
  const sim = stack.regions.get('eu-west-1')!.sim.sim;
  sim.holdWorkload('unkey', canary);
  await new KubeClient(sim.kubeConfig()).delete({ apiVersion: 'v1', kind: 'Pod', namespace: 'unkey', name: `${canary}-0` });
  const done = await status(canary, ['ready', 'rolled_back', 'failed'], 30_000);
  sim.releaseWorkload('unkey', canary);
  assert.equal(done.status, 'rolled_back', done.error);
  assert.match(done.error, /not ready within the step: .*eu-west-1 0\/1/);
  assert.deepEqual(await table(), [{ deploymentId: stable, weight: 100 }]);
});

test('blue-green with failureLimit 5 fails when every check fails, though its window is three intervals', async () => {
  const blue = await freshStable();
  prom.set(0.9);
  const green = await create({ type: 'blue-green', scaleDownDelay: '1s', analysis: gate({ interval: '300ms', failureLimit: 5 }) });
  const w = watchWeight(green);
  const done = await status(green, ['ready', 'rolled_back', 'failed'], 30_000);
  assert.equal(await w.stop(), 0, 'green never got traffic');
  assert.equal(done.status, 'rolled_back', `ended ${done.status}: ${done.error}`);
  assert.match(done.error, /analysis failed: .* \(5 of failureLimit 5 checks failed\)/);
  assert.deepEqual(await table(), [{ deploymentId: blue, weight: 100 }]);
  assert.equal((await stack.api(`/v1/deployments/${blue}`)).body.status, 'ready');
});

test('blue-green keeps blue running when traffic came back to it during the scale-down delay', async () => {
  const blue = await freshStable();
  // A delay no test waits out: the promote below lands inside it whatever the machine's load
  // (with 2 s, a slow promote came after the scale-down). The test then ends the delay itself by
  // making the delayed scale-down due, as the clock would.
  const green = await create({ type: 'blue-green', scaleDownDelay: '1h' });
  assert.equal((await status(green, ['ready', 'rolled_back', 'failed'])).status, 'ready');
  assert.deepEqual(await table(), [{ deploymentId: green, weight: 100 }]);
  const back = await stack.api(`/v1/deployments/${blue}/promote`, { method: 'POST' });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  // Green is ready in the switch's transaction; the walk sends the delayed scale-down in its next
  // statement, so the row may not be there yet when the test sees ready.
  const due = await until(async () => {
    const rows = await stack.db.sql<{ id: string }[]>`UPDATE engine_invocations SET due_at = now()
      WHERE object_key = ${blue} AND handler = 'scaleDown' AND status <> 'completed' RETURNING id`;
    assert.ok(rows.length <= 1, 'the switch scheduled one delayed scale-down of blue');
    return rows[0];
  }, 15_000, 'the delayed scale-down of blue');
  const done = await until(async () => {
    const v = (await stack.api(`/v1/invocations/${due.id}`)).body;
    return v?.status === 'completed' && v;
  }, 15_000, 'the scale-down ran');
  assert.deepEqual(done.result, { deploymentId: blue, stopped: false, reason: 'it carries traffic again' });
  const b = (await stack.api(`/v1/deployments/${blue}`)).body;
  assert.equal(b.status, 'ready');
  assert.equal(b.desiredState, 'running');
  assert.deepEqual(await table(), [{ deploymentId: blue, weight: 100 }]);
});

test('the failure count survives a ctrl restart: it is derived from the journaled checks', async () => {
  const stable = await freshStable();
  prom.set(0.9);
  const before = prom.queries();
  const canary = await create({ type: 'canary', steps: [{ weight: 20, pause: '60s' }], analysis: gate({ interval: '2s', failureLimit: 3 }) });
  await until(() => prom.queries() - before >= 2, 30_000, 'two failed checks');
  await stack.restartCtrl();
  const done = await status(canary, ['ready', 'rolled_back', 'failed'], 30_000);
  assert.equal(done.status, 'rolled_back', done.error);
  assert.match(done.error, /\(3 of failureLimit 3 checks failed\)/);
  // The third query was the last: the resumed walk counted the two before the restart.
  assert.equal(prom.queries() - before, 3, 'checks queried in all');
  assert.deepEqual(await table(), [{ deploymentId: stable, weight: 100 }]);
});
