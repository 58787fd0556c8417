// The rollout commands through commander against the in-process system with a small fleet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderRollout } from '../../src/cli/commands/rollout';
import { testStack, until } from '../helpers/stack';
import { runCli, runProgram } from '../helpers/cli';
import { newId } from '../../src/ids';
import { cilium, sentinels, tenancy, withTx } from '../../src/store';

const stack = await testStack({ regions: ['us-east-1'] });
await withTx(stack.db.sql, async (tx) => {
  for (let i = 0; i < 4; i++) {
    const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: newId('env') };
    await tenancy.insertEnvironment(tx, { ...scope, slug: `cli${i}` });
    await sentinels.ensureSentinel(tx, { id: newId('snt'), ...scope, region: 'us-east-1', image: 'sentinel:v1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
    await cilium.ensureCiliumPolicy(tx, { id: newId('cnp'), ...scope, region: 'us-east-1' });
  }
});
await until(async () => (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE health = 'healthy'`)[0]!.n === 4, 20_000, 'fleet healthy');

async function cli(argv: string[]) {
  const r = await runCli(argv, { env: { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken } });
  return { code: r.code, out: r.stdout, err: r.stderr };
}

test('rollout start, status --watch to completion, and the per-wave view', async () => {
  const idle = await cli(['rollout', 'status']);
  assert.equal(idle.code, 0);
  assert.match(idle.out, /no rollout has run yet/);

  const bad = await cli(['rollout', 'start', '--image', 'sentinel:v2', '--waves', '25,50']);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /last wave must be 100/);
  assert.match(bad.err, /--waves/);
  // A value commander's parser refuses: the real program's usage exit.
  const notNumbers = await runProgram(['rollout', 'start', '--image', 'sentinel:v2', '--waves', 'a,b'], { env: { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken } });
  assert.equal(notNumbers.code, 2, notNumbers.stderr);
  assert.match(notNumbers.stderr, /--waves/);

  const start = await cli(['rollout', 'start', '--image', 'sentinel:v2', '--waves', '25,50,100']);
  assert.equal(start.code, 0, start.err);
  assert.match(start.out, /4 sentinels in 3 waves \(1, 1, 2\)/);

  const watch = await cli(['rollout', 'status', '--watch']);
  assert.equal(watch.code, 0, watch.err);
  assert.match(watch.out, /rollout to sentinel:v2: completed/);
  assert.match(watch.out, /wave 3\s+\[#{20}\] 2\/2 ready/);

  const json = await cli(['rollout', 'status', '--json']);
  assert.equal(JSON.parse(json.out).state, 'completed');
  const resume = await cli(['rollout', 'resume']);
  assert.equal(resume.code, 1, 'resume of a completed rollout is refused');
  assert.match(resume.err, /paused/);
});

test('renderRollout shows failures with their reasons', () => {
  const text = renderRollout({
    state: 'paused',
    image: 'x:2',
    currentWave: 1,
    succeededIds: ['a'],
    failedIds: ['b'],
    waves: [
      { index: 0, sentinels: [{ id: 'a', status: 'READY' }] },
      { index: 1, sentinels: [{ id: 'b', status: 'FAILED', reason: 'did not converge' }, { id: 'c', status: 'READY' }] },
      { index: 2, sentinels: [{ id: 'd', status: 'pending' }] },
    ],
  });
  assert.match(text, /rollout to x:2: paused {2}wave 2\/3 {2}succeeded 1 {2}failed 1/);
  assert.match(text, /wave 2 .* 1\/2 ready {2}1 failed: b \(did not converge\)/);
  assert.match(text, /wave 3 .* 0\/1 ready/);
});
