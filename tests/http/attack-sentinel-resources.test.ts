// Attack (after issue 32): a scoped key sizes its sentinel as it likes. Issue 32 made sentinel
// images the platform's because a sentinel runs in the shared `sentinel` namespace with the
// platform's credentials; docs/tenancy.md gives a key `sentinels.write` to "scale or restart its
// environment's sentinel (`{ "replicas" }`)". The body also takes `cpuMillicores` (to 256,000)
// and `memoryMib` (to 1,048,576), and nothing in the route stops a key setting them
// (src/http/api/sentinels.ts checks `image` only): one key puts 100 replicas of 256 cores and
// 1 TiB each into the namespace every tenant's sentinels share, on the nodes they tolerate
// (`node-class=sentinel`), where the platform, not the tenant, pays and plans the room; no
// per-workspace cap counts it. Seen on the dev stack: the Deployment took 100 × 256000m/1048576Mi.
// Fails on main at 8edb159.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sentinels, tenancy } from '../../src/store';
import { testCtrl } from './helpers';
import { makeKey, makeTenant } from '../e2e/tenancy-helpers';

const t = await testCtrl({ keyRateLimit: 1000 });
const A = await makeTenant(t, 'a');
const appId = (await tenancy.projectApp(t.db.sql, A.projectId))!;
await sentinels.ensureSentinel(t.db.sql, { id: 'snt-of-a', workspaceId: A.workspaceId, projectId: A.projectId, appId, environmentId: A.environmentId, region: 'us-east-1', image: 'ghcr.io/unkeyed/sentinel:1', replicas: 1, cpuMillicores: 250, memoryMib: 256 });
const keyA = await makeKey(t, { workspaceId: A.workspaceId }, ['sentinels.write', 'deployments.read']);
const deploy = (body: unknown) => t.api('/v1/sentinels/snt-of-a/deploy?wait=false', { token: keyA.key, body });

test("a scoped key may scale its sentinel but not size its pods: cpuMillicores and memoryMib are 403 naming the field", async () => {
  for (const [field, value] of [['cpuMillicores', 256_000], ['memoryMib', 1_048_576]] as const) {
    const r = await deploy({ [field]: value });
    assert.equal(r.status, 403, `${field} ${value} from a key: ${r.status} ${r.text}`);
    assert.equal(r.body.error.details?.[0]?.field, field, r.text);
  }
  const row = (await sentinels.getSentinel(t.db.sql, 'snt-of-a'))!;
  assert.deepEqual([row.cpuMillicores, row.memoryMib], [250, 256], 'the sentinel keeps the platform\'s size');
  // Scaling stays the key's.
  assert.equal((await deploy({ replicas: 2 })).status, 202);
});
