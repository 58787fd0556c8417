// Attack (after issue 32): GET /v1/regions shows every tenant's things to any key with
// regions.read. A region's view carries its apply failures (resource type, resource id, code and
// the cluster's reason, of whichever tenant's object the cluster refused) and its drift
// (`lastObject`: the last object krane put back, whoever's), read from the region's rows with no
// scope (src/store/regions.ts#listRegions, src/http/api/regions.ts). regions.read is a
// permission any workspace key may hold (docs/tenancy.md), so a key of workspace A reads B's
// deployment ids and the Kubernetes API server's words about B's objects, which quote their
// fields. SECURITY.md: "nothing a tenant can observe names another's things".
//
// What krane sends is sent here by hand with the region's agent token: an apply failure of B's
// deployment (the cluster refused it) and a heartbeat whose drift names B's StatefulSet, as
// krane reports them. Fails on main at 8edb159.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { topology } from '../../src/store';
import { REGION, testCtrl } from './helpers';
import { insertDeploymentOf, makeKey, makeTenant } from '../e2e/tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
const DEP_B = 'dep-bbbbbbbbbbbbbbbb';
await insertDeploymentOf(t, B, DEP_B);
await topology.upsertTopology(t.db.sql, { deploymentId: DEP_B, region: REGION, workspaceId: B.workspaceId, replicas: 1 });
const DEP_A = 'dep-aaaaaaaaaaaaaaaa';
await insertDeploymentOf(t, A, DEP_A);
await topology.upsertTopology(t.db.sql, { deploymentId: DEP_A, region: REGION, workspaceId: A.workspaceId, replicas: 1 });
const regionsReader = await makeKey(t, { workspaceId: A.workspaceId }, ['regions.read']);

const agent = (path: string, body: unknown) => t.api(path, { token: t.agentToken, body });

test("a key of workspace A reading GET /v1/regions learns nothing of B's objects", async () => {
  const secretish = 'spec.template.spec.containers[0].env[0].value: Invalid value: "STRIPE_KEY=sk_live_b"';
  const failed = await agent('/v1/cluster/deployments/status', {
    region: REGION,
    applies: [
      { resource: { type: 'deployment_topology', id: DEP_B, region: REGION }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: `StatefulSet "${DEP_B}" is invalid: ${secretish}` },
      { resource: { type: 'deployment_topology', id: DEP_A, region: REGION }, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: `StatefulSet "${DEP_A}" is invalid` },
    ],
  });
  assert.equal(failed.status, 200, failed.text);
  const beat = await agent('/v1/cluster/heartbeat', {
    region: REGION,
    agentId: 'krane-0',
    version: '0.1.0',
    leader: true,
    objects: { 'StatefulSet/unkey': 1 },
    drift: { repaired: 1, byKind: { StatefulSet: 1 }, lastAt: new Date().toISOString(), lastObject: `StatefulSet unkey/${DEP_B}` },
  });
  assert.equal(beat.status, 200, beat.text);
  // The admin token sees the region's facts (that is what the view is for) ...
  const admin = await t.api('/v1/regions');
  assert.ok(admin.text.includes(DEP_B), `the admin's view names the failure: ${admin.text}`);
  // ... a tenant's key must not see B's ids or the cluster's words about B's objects.
  const seen = await t.api('/v1/regions', { token: regionsReader.key });
  assert.equal(seen.status, 200, seen.text);
  assert.ok(Array.isArray(seen.body) && seen.body.length > 0, seen.text);
  assert.ok(!seen.text.includes(DEP_B), `A's key reads B's deployment id: ${seen.text}`);
  assert.ok(!seen.text.includes('sk_live_b'), `A's key reads the cluster's reason about B's object: ${seen.text}`);
  // Its own failures stay in its view: that is what keeps its deployment from running.
  assert.deepEqual(seen.body[0].failures.map((f: { resourceId: string }) => f.resourceId), [DEP_A], seen.text);
});
