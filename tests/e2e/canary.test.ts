// Canary deployments (issue 13) end to end: the weights walk through every region's routes
// ConfigMap, a healthy canary ends at 100% with the old deployment stopped, a canary that starts
// crash-looping is rolled back on krane's report with the reason, and abort / promote by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentsOf, routeWeights, sameRoutesIn } from '../helpers/stack';

// One test points the gate at http://127.0.0.1:1 (nothing listens): plain http there is allowed explicitly.
const stack = await testStack({ ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
const BOTH = ['us-east-1', 'eu-west-1'];

const { create, status } = deploymentsOf(stack, BOTH);

const weights = (region: string) => routeWeights(stack, region);
const sameIn = (region: string, expected: string[], ms = 10_000) => sameRoutesIn(stack, region, expected, ms);

/** A rolling deployment serving the environment everywhere: each test's own stable, so each
 *  passes alone by name. */
async function freshStable(): Promise<string> {
  const id = await create();
  await status(id, ['ready']);
  for (const r of BOTH) await sameIn(r, [`${id}:100`], 30_000);
  return id;
}

test('a healthy canary walks its steps in every region and ends at 100% with the old deployment stopped', async () => {
  const stable = await freshStable();

  const canary = await create({ type: 'canary', steps: [{ weight: 10, pause: '1500ms' }, { weight: 50, pause: '1500ms' }] });
  // Every split the walk sets is seen in each region's cluster, in order.
  const seen = new Map<string, string[]>(BOTH.map((r) => [r, []]));
  const watch = setInterval(() => {
    for (const r of BOTH) {
      void weights(r).then((w) => {
        const k = w.join(',');
        const list = seen.get(r)!;
        if (list[list.length - 1] !== k) list.push(k);
      });
    }
  }, 50);
  try {
    const done = await status(canary, ['ready', 'failed', 'rolled_back']);
    assert.equal(done.status, 'ready', done.error);
    for (const r of BOTH) await sameIn(r, [`${canary}:100`]);
  } finally {
    clearInterval(watch);
  }
  for (const r of BOTH) {
    // (100% canary, the last, is what sameIn waited for above.)
    const order = [`${stable}:100`, `${stable}:90,${canary}:10`, `${stable}:50,${canary}:50`].map((k) => seen.get(r)!.indexOf(k));
    assert.ok(order.every((i) => i >= 0) && order[0]! < order[1]! && order[1]! < order[2]!, `${r} saw ${JSON.stringify(seen.get(r))}`);
  }
  assert.deepEqual((await stack.api('/v1/environments/default/traffic')).body.backends, [{ deploymentId: canary, weight: 100 }]);
  const old = await status(stable, ['stopped'], 10_000);
  assert.equal(old.desiredState, 'stopped');
});

test('a canary that starts crash-looping is rolled back to 100% stable on krane\'s report, with the signal and region', async () => {
  const stable = await freshStable();
  // A step far longer than any wait here: rolled back within the wait means on the report.
  const canary = await create({ type: 'canary', steps: [{ weight: 20, pause: '10m' }] });
  for (const r of BOTH) await sameIn(r, [`${stable}:80`, `${canary}:20`], 30_000);
  stack.regions.get('eu-west-1')!.sim.sim.setFault('unkey', canary, 'crash');
  const done = await status(canary, ['rolled_back', 'ready', 'failed'], 20_000);
  assert.equal(done.status, 'rolled_back');
  assert.match(done.error, /canary instance failed in eu-west-1: .*CrashLoopBackOff/);
  for (const r of BOTH) await sameIn(r, [`${stable}:100`]);
  assert.equal(done.desiredState, 'stopped');
  assert.equal((await status(stable, ['ready'])).status, 'ready', 'the stable deployment keeps running');
  // Its image is quarantined (issue 25); the crash was injected, so release it for what follows.
  const quarantined = (await stack.api('/v1/environments/default/quarantine')).body.images;
  assert.ok(quarantined.some((q: any) => q.image === 'nginx:1.27' && q.deploymentId === canary), JSON.stringify(quarantined));
  assert.equal((await stack.api(`/v1/environments/default/quarantine/${encodeURIComponent('nginx:1.27')}`, { method: 'DELETE' })).status, 200);

  // A canary whose image crash-loops from the start never gets traffic and ends the same way.
  const crashing = await stack.api('/v1/deployments', { body: { image: 'registry.local/app:crash-2', regions: BOTH, replicas: 1, strategy: { type: 'canary', steps: [{ weight: 20, pause: '60s' }] } } });
  const early = await status(crashing.body.id, ['rolled_back', 'ready', 'failed'], 20_000);
  assert.equal(early.status, 'rolled_back');
  assert.match(early.error, /canary instance failed in (us-east-1|eu-west-1): .*CrashLoopBackOff/);
  for (const r of BOTH) await sameIn(r, [`${stable}:100`]);

  const metrics = await (await fetch(`${stack.ctrl.url}/metrics`)).text();
  for (const line of [/deployment_workflow_status\{status="rolled_back"[^}]*\} [1-9]/, /deployment_analysis_checks_total\{signal="instances",verdict="fail"[^}]*\} [1-9]/, /deployment_analysis_checks_total\{signal="instances",verdict="pass"[^}]*\} [1-9]/]) {
    assert.ok(line.test(metrics), `metrics lack ${line}`);
  }
});

test('abort rolls a canary back by hand; promote skips a canary to 100%; a finished one cannot be aborted; a second walk in the environment is refused', async () => {
  let stable = await freshStable();
  const aborted = await create({ type: 'canary', steps: [{ weight: 30, pause: '60s' }] });
  for (const r of BOTH) await sameIn(r, [`${stable}:70`, `${aborted}:30`], 30_000);
  const a = await stack.api(`/v1/deployments/${aborted}/abort`, { method: 'POST' });
  assert.equal(a.status, 202, JSON.stringify(a.body));
  const done = await status(aborted, ['rolled_back', 'ready', 'failed'], 10_000);
  assert.equal(done.status, 'rolled_back');
  assert.match(done.error, /aborted by operator/);
  for (const r of BOTH) await sameIn(r, [`${stable}:100`]);

  const promoted = await create({ type: 'canary', steps: [{ weight: 10, pause: '60s' }, { weight: 50, pause: '60s' }] });
  for (const r of BOTH) await sameIn(r, [`${stable}:90`, `${promoted}:10`], 30_000);
  const p = await stack.api(`/v1/deployments/${promoted}/promote`, { method: 'POST' });
  assert.equal(p.status, 200, JSON.stringify(p.body));
  assert.equal(p.body.promoting, true);
  assert.equal((await status(promoted, ['ready', 'rolled_back', 'failed'], 10_000)).status, 'ready');
  for (const r of BOTH) await sameIn(r, [`${promoted}:100`]);

  const again = await stack.api(`/v1/deployments/${promoted}/abort`, { method: 'POST' });
  assert.equal(again.status, 409, 'a finished canary cannot be aborted');
  assert.equal((await stack.api('/v1/deployments/dep-nope/abort', { method: 'POST' })).status, 404);
  stable = promoted;

  // A second canary while one is moving traffic fails with the reason and leaves the first alone.
  const first = await create({ type: 'canary', steps: [{ weight: 10, pause: '60s' }] });
  for (const r of BOTH) await sameIn(r, [`${stable}:90`, `${first}:10`], 30_000);
  const second = await create({ type: 'canary', steps: [{ weight: 20, pause: '60s' }] });
  const refused = await status(second, ['failed', 'ready', 'rolled_back']);
  assert.equal(refused.status, 'failed');
  assert.match(refused.error, /another canary or blue-green is moving traffic/);
  assert.deepEqual(await weights('us-east-1'), [`${stable}:90`, `${first}:10`]);
  assert.equal((await stack.api(`/v1/deployments/${first}/abort`, { method: 'POST' })).status, 202);
  await status(first, ['rolled_back'], 10_000);
});

test('blue-green switches all traffic in one change, keeps the old deployment running during the delay; abort before the switch keeps the old', async () => {
  let stable = await freshStable();
  // A delay no wait of this file reaches: blue still running after the switch is the delay at
  // work, not a fast machine (a 1.5 s delay had passed by the check on a loaded one).
  const green = await create({ type: 'blue-green', scaleDownDelay: '10m' });
  const seen = new Set<string>();
  const watch = setInterval(() => void weights('us-east-1').then((w) => seen.add(w.join(','))), 25);
  try {
    assert.equal((await status(green, ['ready', 'rolled_back', 'failed'])).status, 'ready');
    for (const r of BOTH) await sameIn(r, [`${green}:100`]);
  } finally {
    clearInterval(watch);
  }
  // Never a split with traffic on both: 100% blue (green at 0 while it is checked), then 100% green.
  assert.deepEqual([...seen].filter((k) => k.includes(',') && !k.endsWith(':0')), [], JSON.stringify([...seen]));
  assert.equal((await stack.api(`/v1/deployments/${stable}`)).body.status, 'ready', 'blue keeps running during the scale-down delay');
  stable = green;

  // A gate that cannot conclude (nothing listens on port 1) holds the switch; abort meanwhile.
  const held = await create({ type: 'blue-green', analysis: { interval: '5s', prometheus: { url: 'http://127.0.0.1:1', query: 'up', min: 1 } } });
  for (const r of BOTH) await sameIn(r, [`${stable}:100`, `${held}:0`], 30_000);
  assert.equal((await stack.api(`/v1/deployments/${held}/abort`, { method: 'POST' })).status, 202);
  const done = await status(held, ['rolled_back', 'ready', 'failed'], 10_000);
  assert.equal(done.status, 'rolled_back');
  assert.match(done.error, /aborted by operator/);
  for (const r of BOTH) await sameIn(r, [`${stable}:100`]);
  assert.equal((await stack.api(`/v1/deployments/${stable}`)).body.status, 'ready');
});

test('blue-green stops the old deployment once its scale-down delay has passed', async () => {
  const blue = await freshStable();
  const green = await create({ type: 'blue-green', scaleDownDelay: '1500ms' });
  assert.equal((await status(green, ['ready', 'rolled_back', 'failed'])).status, 'ready');
  await status(blue, ['stopped']);
  for (const r of BOTH) assert.deepEqual(await weights(r), [`${green}:100`]);
});

test('a rolling deploy that takes the traffic during a canary ends the canary instead of being overwritten', async () => {
  const stable = await freshStable();
  // A first step longer than the test: the 90/10 split stands until the rolling deploy takes
  // the table (a 2 s one could move on to 50/50 before both regions were polled). The walk's
  // holds compare the table at every re-check, so the takeover still ends it mid-step.
  const walking = await create({ type: 'canary', steps: [{ weight: 10, pause: '10m' }, { weight: 50, pause: '60s' }] });
  for (const r of BOTH) await sameIn(r, [`${stable}:90`, `${walking}:10`], 30_000);
  const rolling = await create();
  for (const r of BOTH) await sameIn(r, [`${rolling}:100`], 30_000);
  const ended = await status(walking, ['failed', 'ready', 'rolled_back']);
  assert.equal(ended.status, 'failed');
  assert.match(ended.error, new RegExp(`traffic of environment default was changed while this deployment was shifting it .*: the table is ${rolling}:100`));
  for (const r of BOTH) assert.deepEqual(await weights(r), [`${rolling}:100`], 'the canary did not write its split back');
  assert.deepEqual(ended.topology.map((t: any) => t.desiredStatus), ['stopped', 'stopped'], 'the canary\'s workloads are stopped');
});
