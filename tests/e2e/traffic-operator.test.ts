// An operator's stop and promote against the traffic table and the walks that move it: a stop
// takes the deployment's traffic away (so no later walk or abort can send traffic back to it),
// and a promote in the middle of a canary or blue-green stands instead of being overwritten by
// the walk's next write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentsOf, routeWeights, sameRoutesIn } from '../helpers/stack';

// The blue-green test holds its switch with a gate at http://127.0.0.1:1 (nothing listens there).
const stack = await testStack({ ctrl: { settings: { outboundAllow: '127.0.0.1' } } });
const BOTH = ['us-east-1', 'eu-west-1'];

const { create, status } = deploymentsOf(stack, BOTH);
const post = (id: string, action: string) => stack.api(`/v1/deployments/${id}/${action}`, { method: 'POST' });
const table = async () => ((await stack.api('/v1/environments/default/traffic')).body.backends as { deploymentId: string; weight: number }[]).map((b) => `${b.deploymentId}:${b.weight}`);

const weights = (region: string) => routeWeights(stack, region);
const sameIn = (region: string, expected: string[], ms = 10_000) => sameRoutesIn(stack, region, expected, ms);

test('a stop takes the deployment\'s traffic away; a canary after it has no stable to walk from; a start brings it back to an empty table', async () => {
  const old = await create();
  await status(old, ['ready']);
  for (const r of BOTH) await sameIn(r, [`${old}:100`]);

  assert.equal((await post(old, 'stop')).status, 200);
  await status(old, ['stopped'], 10_000);
  assert.deepEqual(await table(), [], 'the stopped deployment was the only backend: nothing serves the environment');
  for (const r of BOTH) await sameIn(r, []);

  // A start brings the instances back, and with nothing else serving, the traffic too.
  assert.equal((await post(old, 'start')).status, 200);
  await status(old, ['ready']);
  assert.deepEqual(await table(), [`${old}:100`]);
  for (const r of BOTH) await sameIn(r, [`${old}:100`]);

  // Stopped again: a canary that starts now must not take it as its stable (an abort or a failing
  // gate would then send 100% to a deployment without instances).
  assert.equal((await post(old, 'stop')).status, 200);
  await status(old, ['stopped'], 10_000);
  const canary = await create({ type: 'canary', steps: [{ weight: 10, pause: '60s' }] });
  const done = await status(canary, ['ready', 'failed', 'rolled_back']);
  assert.equal(done.status, 'ready', done.error);
  assert.deepEqual(await table(), [`${canary}:100`]);
  for (const r of BOTH) await sameIn(r, [`${canary}:100`]);
});

test('a promote of the stable during a canary stands: the walk ends failed with the reason and writes nothing over it', async () => {
  const stable = await create();
  await status(stable, ['ready']);
  // A first step longer than the test: the 90/10 split stands until the promote (a 2 s one
  // could move on to 50/50 before both regions were polled). The check that ends a step is the
  // hold's re-check, which compares the table every time, so the walk's next look after the
  // promote is the one that must find it and write nothing.
  const canary = await create({ type: 'canary', steps: [{ weight: 10, pause: '10m' }, { weight: 50, pause: '60s' }] });
  for (const r of BOTH) await sameIn(r, [`${stable}:90`, `${canary}:10`], 30_000);

  const p = await post(stable, 'promote');
  assert.equal(p.status, 200, JSON.stringify(p.body));
  assert.equal(p.body.promoting, undefined, 'the stable is ready: promoted at once, not handed to a walk');
  // The walk's next check (its re-check, or the end of a step) used to write its next split
  // over the promote.
  const ended = await until(async () => {
    const d = (await stack.api(`/v1/deployments/${canary}`)).body;
    return ['failed', 'ready', 'rolled_back'].includes(d.status) ? d : undefined;
  }, 15_000, `${canary} ended`).catch(() => undefined);
  assert.deepEqual(await table(), [`${stable}:100`], 'the promote stands');
  assert.ok(ended, 'the walk ended');
  assert.equal(ended.status, 'failed');
  assert.match(ended.error, /traffic of environment default was changed .*while this deployment was shifting it/);
  assert.deepEqual(ended.topology.map((t: any) => t.desiredStatus), ['stopped', 'stopped'], 'the canary\'s workloads are stopped');
  for (const r of BOTH) await sameIn(r, [`${stable}:100`]);
  assert.equal((await stack.api(`/v1/deployments/${stable}`)).body.status, 'ready');
});

test('a promote of blue while green is analysed stands: green ends failed and never gets traffic', async () => {
  const blue = await create();
  await status(blue, ['ready']);
  const green = await create({ type: 'blue-green', analysis: { interval: '5s', prometheus: { url: 'http://127.0.0.1:1', query: 'up', min: 1 } } });
  for (const r of BOTH) await sameIn(r, [`${blue}:100`, `${green}:0`], 30_000);
  assert.equal((await post(blue, 'promote')).status, 200);
  // Noticed at green's next check (its analysis interval, 5 s), long before the 15 s window closes.
  const ended = await status(green, ['failed', 'ready', 'rolled_back'], 20_000);
  assert.equal(ended.status, 'failed');
  assert.match(ended.error, /was changed while this deployment was shifting it/);
  assert.deepEqual(await table(), [`${blue}:100`]);
  for (const r of BOTH) await sameIn(r, [`${blue}:100`]);
});
