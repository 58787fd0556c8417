// Attack (after issue 32): another tenant's activity empties a key's invocation list. For a key,
// GET /v1/invocations reads the newest limit×5 invocations of the whole fleet and then keeps those
// of the key's scope (src/http/api/invocations.ts, MAX_SCAN), so a page of A's invocations is
// whatever of A's happens to be among everyone's newest: B deploying (or any tenant's workflows)
// pushes A's out, and A's answer changes with B's calls. The isolation rule (DESIGN.md section
// 14): nothing a tenant does changes what another tenant can observe. It also tells A how busy
// the platform is. Fails on main at 8edb159.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/wait';
import { testCtrl } from './helpers';
import { makeKey, makeTenant } from '../e2e/tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
const readerA = await makeKey(t, { workspaceId: A.workspaceId }, ['invocations.read']);
const deploy = async (environmentId: string) => {
  const r = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1, environmentId } });
  assert.equal(r.status, 202, r.text);
  return r.body.id as string;
};
const keysOfNewest = async (n: number) => ((await t.api(`/v1/invocations?limit=${n}`)).body.invocations as { key: string | null }[]).map((i) => i.key);
const pageOfA = async () => ((await t.api('/v1/invocations?limit=1', { token: readerA.key })).body.invocations as { key: string }[]).map((i) => i.key);

test("a key's page of its own invocations does not depend on another tenant's activity", async () => {
  const depA = await deploy(A.environmentId);
  // A's deploy also starts its environment's sentinel's deploy (a new sentinel): wait for both,
  // so A has no invocation still to come and its newest is settled.
  const idsOfA = async () => [depA, ...((await t.api(`/v1/sentinels?environmentId=${A.environmentId}`)).body.sentinels as { id: string }[]).map((s) => s.id)];
  await until(async () => {
    const [ids, keys] = [await idsOfA(), await keysOfNewest(100)];
    return ids.length > 1 && ids.every((id) => keys.includes(id));
  }, 10_000, "A's deploy and sentinel invocations");
  const ofA = await idsOfA();
  const newestOfA = (await keysOfNewest(100)).filter((k) => k !== null && ofA.includes(k)).slice(0, 1);
  assert.equal(newestOfA.length, 1);
  assert.deepEqual(await pageOfA(), newestOfA, 'alone, A sees its newest invocation');
  // B deploys until none of A's invocations is among the fleet's newest five.
  const depsB: string[] = [];
  const anyOfANewest = async () => (await keysOfNewest(5)).some((k) => k !== null && ofA.includes(k));
  for (let i = 0; i < 20 && (await anyOfANewest()); i++) depsB.push(await deploy(B.environmentId));
  assert.ok(!(await anyOfANewest()) && depsB.length > 0, 'B is the busier tenant now');
  assert.deepEqual(await pageOfA(), newestOfA, `after B's ${depsB.length} deploys, A's page of one must still hold A's newest invocation`);
});
