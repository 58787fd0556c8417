// Sentinel images are the platform's (issue 32). A sentinel runs in the shared namespace with the
// platform's credentials (envFrom: sentinel-credentials) and the labels the NetworkPolicy lets
// into every tenant's workloads, so a scoped key may scale or restart its environment's sentinel
// but not choose what it runs: an `image` from a key is 403 ERR_FORBIDDEN. ctrl can pin the images
// a sentinel may run (--sentinel-images: repository prefixes or digests); one outside the list is
// 403 naming the rule, for the admin token and a fleet rollout alike. Found by attack: a
// sentinels.write key deployed docker.io/attacker/implant:1 to its sentinel.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sentinels, tenancy } from '../../src/store';
import { parseImageAllow, imageAllowed } from '../../src/image-allow';
import { testCtrl } from '../http/helpers';
import { loadConfig } from '../../src/config';
import { makeKey, makeTenant } from './tenancy-helpers';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const t = await testCtrl({ sentinelImages: `ghcr.io/unkeyed/sentinel,registry.local/pinned@${DIGEST}`, sentinelImage: 'ghcr.io/unkeyed/sentinel:1' });
const A = await makeTenant(t, 'a');
const appId = (await tenancy.projectApp(t.db.sql, A.projectId))!;
await sentinels.ensureSentinel(t.db.sql, { id: 'snt-of-a', workspaceId: A.workspaceId, projectId: A.projectId, appId, environmentId: A.environmentId, region: 'us-east-1', image: 'ghcr.io/unkeyed/sentinel:1', replicas: 1, cpuMillicores: 100, memoryMib: 128 });
const key = await makeKey(t, { workspaceId: A.workspaceId }, ['sentinels.write', 'deployments.read']);
const deploy = (body: unknown, token?: string) => t.api('/v1/sentinels/snt-of-a/deploy?wait=false', { body, ...(token ? { token } : {}) });
const invocations = async () => (await t.db.sql`SELECT count(*)::int AS n FROM engine_invocations WHERE object_key = 'snt-of-a'`)[0]!.n as number;

test('a scoped key may scale its sentinel but not choose its image: 403 naming the rule, nothing started', async () => {
  const before = await invocations();
  for (const image of ['docker.io/attacker/implant:1', 'ghcr.io/unkeyed/sentinel:2']) {
    const r = await deploy({ image }, key.key);
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error.code, 'ERR_FORBIDDEN');
    assert.equal(r.body.error.details[0].field, 'image');
    assert.match(r.body.error.message, /image/);
  }
  assert.equal(await invocations(), before, 'no workflow started');
  const scale = await deploy({ replicas: 2 }, key.key);
  assert.equal(scale.status, 202, scale.text);
});

test('--sentinel-images: an image outside the list is 403 naming the rule, for the admin token and a rollout too', async () => {
  const outside = await deploy({ image: 'ghcr.io/unkeyed/sentinel-evil:1' });
  assert.equal(outside.status, 403, outside.text);
  assert.match(outside.body.error.message, /--sentinel-images/);
  assert.equal((await deploy({ image: `registry.local/pinned@sha256:${'b'.repeat(64)}` })).status, 403);
  assert.equal((await deploy({ image: 'ghcr.io/unkeyed/sentinel:2' })).status, 202);
  assert.equal((await deploy({ image: `registry.local/pinned@${DIGEST}` })).status, 202);
  const rollout = await t.api('/v1/sentinel-rollouts', { body: { image: 'docker.io/attacker/implant:1' } });
  assert.equal(rollout.status, 403, rollout.text);
  assert.match(rollout.body.error.message, /--sentinel-images/);
});

test('the allow-list: repository prefixes at a path boundary, pinned references, bare digests', () => {
  const allow = parseImageAllow(`ghcr.io/unkeyed/sentinel,registry.local:5000/team/,${DIGEST},registry.local/pinned@${DIGEST}`);
  assert.ok(Array.isArray(allow));
  const cases: [string, boolean][] = [
    ['ghcr.io/unkeyed/sentinel:1', true],
    ['ghcr.io/unkeyed/sentinel', true],
    [`ghcr.io/unkeyed/sentinel@${DIGEST}`, true],
    ['ghcr.io/unkeyed/sentinel/sub:1', true],
    ['ghcr.io/unkeyed/sentinel-evil:1', false],
    ['ghcr.io/unkeyed/sentinelx', false],
    ['registry.local:5000/team/x:1', true],
    ['registry.local:5000/teamx/x:1', false],
    [`docker.io/anything@${DIGEST}`, true],
    [`registry.local/pinned@${DIGEST}`, true],
    [`registry.local/pinned:1`, false],
    ['docker.io/attacker/implant:1', false],
  ];
  for (const [image, want] of cases) assert.equal(imageAllowed(allow as never, image), want, image);
  assert.equal(imageAllowed([], 'anything:1'), true, 'an empty list allows any image');
  assert.equal(typeof parseImageAllow('not an image!'), 'string');
});

test('ctrl refuses to start with a default sentinel image outside --sentinel-images', () => {
  assert.throws(
    () => loadConfig('ctrl', { databaseUrl: 'postgres://x/y', adminToken: 'a'.repeat(16), sentinelImages: 'ghcr.io/unkeyed/sentinel', sentinelImage: 'docker.io/other:1' }, {}),
    (err: any) => err.problems.some((p: string) => p.includes('--sentinel-image')),
  );
});
