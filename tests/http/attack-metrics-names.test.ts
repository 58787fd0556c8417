// Attack (after issue 32): ctrl's open /metrics names tenants' environments and deployments.
// `/metrics` is open on the API's own port (SECURITY.md: for the scraper), and the gauge
// `deployment_traffic_weight{environment, deployment}` (src/workflow/progressive/metrics.ts)
// carries the ids of every environment whose traffic is split, with each deployment's share: any
// client that reaches the port, a tenant's included, reads which of B's environments are mid
// canary or blue-green, B's deployment ids and the weights, as they move. SECURITY.md: a key
// "learns nothing about other tenants"; DESIGN.md section 14: nothing a tenant can observe names
// another's things. Fails on main at 8edb159.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { routes, topology } from '../../src/store';
import { testCtrl } from './helpers';
import { insertDeploymentOf, makeKey, makeTenant } from '../e2e/tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
const keyA = await makeKey(t, { workspaceId: A.workspaceId }, ['deployments.read']);
// B is mid canary: 90% on its stable, 10% on the canary (as the traffic workflow writes it).
const [stableB, canaryB] = ['dep-stableofbbbbbbbb', 'dep-canaryofbbbbbbbb'];
for (const id of [stableB, canaryB]) {
  await insertDeploymentOf(t, B, id);
  await topology.upsertTopology(t.db.sql, { deploymentId: id, region: 'us-east-1', workspaceId: B.workspaceId, replicas: 1 });
}
await routes.setRoutes(t.db.sql, { environmentId: B.environmentId, workspaceId: B.workspaceId, hostname: 'shop.b.example', backends: [{ deploymentId: stableB, weight: 90 }, { deploymentId: canaryB, weight: 10 }] });

test("/metrics names no tenant's environment or deployment to a caller without the admin token", async () => {
  for (const token of [null, keyA.key]) {
    const r = await fetch(`${t.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    const text = await r.text();
    if (r.status === 401 || r.status === 403) continue;
    assert.equal(r.status, 200);
    const named = [B.environmentId, stableB, canaryB].filter((id) => text.includes(id));
    assert.deepEqual(named, [], `${token ? "A's key" : 'an anonymous client'} reads ${named.join(', ')}: ${text.split('\n').filter((l) => l.startsWith('deployment_traffic_weight')).join(' | ')}`);
  }
});
