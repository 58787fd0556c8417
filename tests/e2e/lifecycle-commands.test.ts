// Operator commands during a canary's walk (issue 23), whatever the walk is doing: the last
// accepted stop/start decides the desired state (a stop and a start 5 ms apart leave it
// running, not rolled back by the walk); a stop during a hold rolls the canary back; an abort
// while the canary's instances are still starting, or while its sentinels are, is honoured then
// (the simulator holds those pods until the test has seen the rollback: no race with a slow or
// fast machine) and the canary never gets traffic. Each test brings its own stable deployment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until, deploymentsOf } from '../helpers/stack';
import { newId } from '../../src/ids';
import { tenancy } from '../../src/store';

const SENTINEL_IMAGE = 'ghcr.io/unkeyed/sentinel:commands';
const stack = await testStack({ ctrl: { settings: { sentinelImage: SENTINEL_IMAGE } } });
/** Holds (in every region) the pods of `image` while `fn` runs, and lets them go after. */
async function holding<T>(image: string, fn: () => Promise<T>): Promise<T> {
  for (const r of stack.regions.values()) r.sim.sim.holdImage(image);
  try {
    return await fn();
  } finally {
    for (const r of stack.regions.values()) r.sim.sim.releaseImage(image);
  }
}
const BOTH = ['us-east-1', 'eu-west-1'];
const { create, status } = deploymentsOf(stack, BOTH);

const table = async () => ((await stack.api('/v1/environments/default/traffic')).body?.backends ?? []) as { deploymentId: string; weight: number }[];
const only = async (id: string) => JSON.stringify(await table()) === JSON.stringify([{ deploymentId: id, weight: 100 }]);
const END = ['ready', 'rolled_back', 'failed', 'stopped'];

async function freshStable(): Promise<string> {
  const id = await create();
  await status(id, ['ready']);
  await until(() => only(id), 15_000, 'stable serving');
  return id;
}

test('stop then start a few ms apart during a canary\'s hold: the start wins, the walk does not roll it back', async () => {
  const stable = await freshStable();
  const canary = await create({ type: 'canary', steps: [{ weight: 20, pause: '60s' }] });
  await until(async () => (await table()).some((b) => b.deploymentId === canary && b.weight === 20), 30_000, 'canary at 20%');
  // The start follows the stop's answer at once (a few ms): the order of the two is fixed (two
  // requests 5 ms apart can arrive swapped on a loaded machine), while the walk is still
  // reacting to the stop (its wake-up, its check, its rollback).
  const a = await stack.api(`/v1/deployments/${canary}/stop`, { method: 'POST' });
  const b = await stack.api(`/v1/deployments/${canary}/start`, { method: 'POST' });
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.equal(b.status, 200, JSON.stringify(b.body));
  assert.equal(a.body.changed && b.body.changed, true, 'both were accepted');
  // Each change's answer carries the generation it made: the later change, the higher one.
  assert.ok(b.body.generation === a.body.generation + 1, `generations ${a.body.generation}, ${b.body.generation}`);
  // The start brings the instances back without walking: there is no walk left to abort, and
  // an abort accepted here was never acted on (the model test found it ending ready).
  const abort = await stack.api(`/v1/deployments/${canary}/abort`, { method: 'POST' });
  assert.equal(abort.status, 409, JSON.stringify(abort.body));
  assert.match(abort.body.error.message, /no walk to abort/);
  // The start's run brings the instances back; the stable keeps the traffic it was given back.
  const d = await status(canary, END, 30_000);
  assert.equal(d.desiredState, 'running', `the last command was a start, found ${d.status} ${d.desiredState}: ${d.error}`);
  assert.equal(d.status, 'ready', d.error);
  assert.deepEqual(d.topology.map((t: any) => t.desiredStatus), ['running', 'running']);
  assert.ok(await only(stable), JSON.stringify(await table()));
  assert.equal((await stack.api(`/v1/deployments/${stable}`)).body.status, 'ready');
  // And the other order: start's no-op, then a stop, leaves it stopped.
  await stack.api(`/v1/deployments/${canary}/stop`, { method: 'POST' });
  assert.equal((await status(canary, ['stopped'], 15_000)).desiredState, 'stopped');
});

test('a stop during a hold rolls the canary back at once, the stable keeping all traffic', async () => {
  const stable = await freshStable();
  // A step far longer than any wait here: ending within the wait means it did not wait for it.
  const canary = await create({ type: 'canary', steps: [{ weight: 30, pause: '10m' }] });
  await until(async () => (await table()).some((b) => b.deploymentId === canary && b.weight === 30), 30_000, 'canary at 30%');
  assert.equal((await stack.api(`/v1/deployments/${canary}/stop`, { method: 'POST' })).status, 200);
  const done = await status(canary, END, 10_000);
  assert.equal(done.status, 'rolled_back', done.error);
  assert.match(done.error, /stopped by operator/);
  assert.equal(done.desiredState, 'stopped');
  assert.ok(await only(stable), JSON.stringify(await table()));
});

test('abort while the canary\'s instances are still starting is honoured then; the canary never gets traffic', async () => {
  const stable = await freshStable();
  await holding('registry.local/app:held-1', () => abortWhileStarting(stable));
});

async function abortWhileStarting(stable: string): Promise<void> {
  const r = await stack.api('/v1/deployments', { body: { image: 'registry.local/app:held-1', regions: BOTH, replicas: 1, strategy: { type: 'canary', steps: [{ weight: 20, pause: '60s' }] } } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const canary = r.body.id;
  // Starting: it is in the table at 0% and its pods exist, not ready.
  await until(async () => (await table()).some((b) => b.deploymentId === canary && b.weight === 0), 30_000, 'canary at 0%');
  await until(async () => {
    const [x] = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM instances WHERE deployment_id = ${canary} AND status IN ('pending', 'creating')`;
    return x!.n > 0;
  }, 10_000, 'canary pods starting');
  let max = 0;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      max = Math.max(max, ...(await table()).filter((b) => b.deploymentId === canary).map((b) => b.weight));
      await new Promise((res) => setTimeout(res, 20));
    }
  })();
  try {
    const aborted = await stack.api(`/v1/deployments/${canary}/abort`, { method: 'POST' });
    assert.equal(aborted.status, 202, JSON.stringify(aborted.body));
    // Rolled back while its pods are still held: it did not wait for them.
    const done = await status(canary, END, 10_000);
    assert.equal(done.status, 'rolled_back', done.error);
    assert.match(done.error, /aborted by operator/);
  } finally {
    watching = false;
    await watch;
  }
  assert.equal(max, 0, 'the aborted canary never got traffic');
  assert.ok(await only(stable), JSON.stringify(await table()));
}

test('abort while the deploy still waits for its sentinels is honoured then; the canary never gets traffic', async () => {
  await holding(SENTINEL_IMAGE, abortWhileSentinels);
});

async function abortWhileSentinels(): Promise<void> {
  // A new environment: its sentinels are made by this deploy, and held until the test ends.
  const environmentId = newId('env');
  await tenancy.insertEnvironment(stack.db.sql, { environmentId, workspaceId: 'default', projectId: 'default', appId: 'default', slug: environmentId });
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: BOTH, replicas: 1, environmentId, strategy: { type: 'canary', steps: [{ weight: 20, pause: '60s' }] } } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const canary = r.body.id;
  await until(async () => {
    const [x] = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE environment_id = ${environmentId} AND deploy_status = 'progressing'`;
    return x!.n > 0;
  }, 10_000, 'sentinels coming up');
  const aborted = await stack.api(`/v1/deployments/${canary}/abort`, { method: 'POST' });
  assert.equal(aborted.status, 202, JSON.stringify(aborted.body));
  const done = await status(canary, END, 10_000);
  assert.equal(done.status, 'rolled_back', done.error);
  assert.match(done.error, /aborted by operator/);
  const traffic = (await stack.api(`/v1/environments/${environmentId}/traffic`)).body?.backends ?? [];
  assert.deepEqual(traffic.filter((b: { deploymentId: string }) => b.deploymentId === canary), []);
}
