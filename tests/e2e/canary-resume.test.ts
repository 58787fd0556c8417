// The canary is a durable workflow (issue 13, DESIGN 11): ctrl restarted in the middle of a step
// resumes the walk from the engine's journal on the new process, keeps the step's deadline, and
// takes each step exactly once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';

const stack = await testStack();
const BOTH = ['us-east-1', 'eu-west-1'];
const traffic = async () => (await stack.api('/v1/environments/default/traffic')).body.backends.map((b: any) => `${b.deploymentId}:${b.weight}`).join(',');

test('ctrl restarted mid-step: the canary resumes from its journal and ends at 100%, each step once', async () => {
  const stable = (await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: BOTH, replicas: 1 } })).body.id;
  await until(async () => (await traffic()) === `${stable}:100`, 20_000, 'stable at 100%');
  const created = await stack.api('/v1/deployments', {
    body: { image: 'nginx:1.27', regions: BOTH, replicas: 1, strategy: { type: 'canary', steps: [{ weight: 10, pause: '3s' }, { weight: 60, pause: '1s' }] } },
  });
  const id = created.body.id;
  await until(async () => (await traffic()) === `${stable}:90,${id}:10`, 20_000, 'first step');
  const stepStarted = Date.now();
  await stack.restartCtrl();
  const restarted = Date.now();

  // The second step, seen as soon as it is written: the first one held as long as its journaled
  // deadline says, no less (the pause was kept) and not much more (the resumed hold woke on
  // time instead of starting the pause again or sleeping a whole re-check).
  let secondAt = 0;
  await until(async () => {
    const t = await traffic();
    if (t === `${stable}:40,${id}:60` || t === `${id}:100`) secondAt ||= Date.now();
    return t === `${id}:100`;
  }, 30_000, 'second step, then 100%');
  const [hold] = await stack.db.sql<{ deadline: number }[]>`
    SELECT (j.value->>'v')::float8 AS deadline FROM engine_journal j JOIN engine_invocations i ON i.id = j.invocation_id
    WHERE i.object_key = ${id} AND i.handler = 'deploy' AND j.name = 'hold-0'`;
  const deadline = hold!.deadline;
  assert.ok(deadline - stepStarted <= 3_000 + 200, 'the deadline was set when the step began');
  assert.ok(secondAt >= deadline, `the first step ended ${deadline - secondAt} ms before its deadline`);
  assert.ok(secondAt <= Math.max(deadline, restarted) + 1_500, `the first step ended ${secondAt - Math.max(deadline, restarted)} ms late`);
  await until(async () => (await stack.api(`/v1/deployments/${id}`)).body.status === 'ready', 30_000, 'ready after the restart');
  assert.equal(await traffic(), `${id}:100`);
  assert.equal((await stack.api(`/v1/deployments/${stable}`)).body.status, 'stopped');

  const runs = (await stack.api(`/v1/invocations?target=DeployService`)).body.invocations.filter((i: any) => i.handler === 'deploy');
  const mine = [];
  for (const r of runs) {
    const inv = (await stack.api(`/v1/invocations/${r.id}`)).body;
    if (inv.key === id) mine.push(inv);
  }
  assert.equal(mine.length, 1, 'one deploy invocation, resumed, not restarted');
  const names = mine[0].journal.map((j: any) => j.name);
  for (const step of ['traffic-start', 'canary-step-0', 'canary-step-1', 'canary-complete']) {
    assert.equal(names.filter((n: string) => n === step).length, 1, `${step} once: ${names.join(' ')}`);
  }
});
