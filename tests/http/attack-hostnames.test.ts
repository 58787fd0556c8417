// Attack (after issue 32): names under another tenant's generated hostnames are free to take.
// src/workflow/deploy/hostnames.ts#reservedHostnameProblem reserves the apex and the names
// directly under it whose first label has a generated shape (`dep-…`, `app-…`, `default-…`), and
// looks no further once the part before the apex has a dot. So a key of workspace A gives its
// environment `x.<B's generated name>` or `login.<B's deployment id>.<apex>`, and routes them:
// a site of A's under B's name. A browser lets that site set cookies for B's host (a cookie's
// Domain may be any parent of the host that sets it, and B's name is a registrable name under a
// platform suffix), so A can plant sessions on B's users (cookie tossing), and the name itself
// passes for B's. The platform generated B's name; no name under it should be anyone else's.
// Fails on main at 8edb159.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testCtrl } from './helpers';
import { makeKey, makeTenant } from '../e2e/tenancy-helpers';

const APEX = 'unkey.local';
const t = await testCtrl({ keyRateLimit: 1000 });
const A = await makeTenant(t, 'a');
const B = await makeTenant(t, 'b');
const keyA = await makeKey(t, { workspaceId: A.workspaceId }, ['environments.write']);
const hostB = (await t.api(`/v1/environments/${B.environmentId}`)).body.hostname as string;
const depB = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1, environmentId: B.environmentId } });

test("names under B's generated environment and deployment hostnames are refused to A (400 naming hostname)", async () => {
  assert.equal(depB.status, 202, depB.text);
  assert.match(hostB, new RegExp(`^app-[a-z2-7]+-production\\.${APEX.replace('.', '\\.')}$`));
  const under = [`x.${hostB}`, `login.${hostB}`, `www.${depB.body.id}.${APEX}`, `a.b.${depB.body.id}.${APEX}`];
  const taken: string[] = [];
  for (const [i, hostname] of under.entries()) {
    const r = await t.api(`/v1/projects/${A.projectId}/environments`, { token: keyA.key, body: { slug: `under-${i}`, hostname } });
    if (r.status === 201) taken.push(hostname);
    else {
      assert.equal(r.status, 400, `${hostname}: ${r.text}`);
      assert.equal(r.body.error.details[0].field, 'hostname');
    }
  }
  assert.deepEqual(taken, [], `A's environments now answer on names under B's: ${taken.join(', ')}`);
});

// Smaller, same rule: the hostname check's message says "a lowercase DNS name", and the claims'
// CHECK holds the same pattern, but both pass names no resolver or certificate can carry: an
// empty label (`shop..example.com`, which also slips `dep-….` past the reserved-name rule, its
// first part containing a dot), a label starting with a hyphen, a label past 63 characters.
test('a hostname that is not a DNS name is 400 naming hostname', async () => {
  const bad = ['shop..example.com', `dep-aaaaaaaaaaaaaaaa..${APEX}`, 'shop.-x.example.com', 'shop.x-.example.com', `${'a'.repeat(64)}.example.com`];
  const accepted: string[] = [];
  for (const [i, hostname] of bad.entries()) {
    const r = await t.api(`/v1/projects/${A.projectId}/environments`, { token: keyA.key, body: { slug: `bad-${i}`, hostname } });
    if (r.status === 201) accepted.push(hostname);
    else assert.equal(r.body.error.details?.[0]?.field, 'hostname', r.text);
  }
  assert.deepEqual(accepted, [], `accepted as hostnames: ${accepted.join(', ')}`);
});
