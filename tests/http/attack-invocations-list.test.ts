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
  await until(async () => (await keysOfNewest(100)).includes(depA), 10_000, "A's deploy invocation");
  assert.deepEqual(await pageOfA(), [depA], 'alone, A sees its newest invocation');
  // B deploys until A's invocations are no longer among the fleet's newest five.
  const depsB: string[] = [];
  for (let i = 0; i < 20 && (await keysOfNewest(5)).includes(depA); i++) depsB.push(await deploy(B.environmentId));
  assert.ok(!(await keysOfNewest(5)).includes(depA) && depsB.length > 0, 'B is the busier tenant now');
  assert.deepEqual(await pageOfA(), [depA], `after B's ${depsB.length} deploys, A's page of one holds no invocation of A's`);
});
