// The deployment spec at the API (issue 16 items 5 and 6, issue 15's one source for its shape):
// a cap on the env's total size, the per-deployment readOnlyRootFilesystem option reaching krane's
// desired state, and rollback copying every field of the spec.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/wait';
import { REGION, testCtrl } from './helpers';

const t = await testCtrl();

const desired = (id: string) =>
  until(async () => {
    const r = await t.api(`/v1/cluster/deployments/${id}/desired?region=${REGION}`, { token: t.agentToken });
    return r.status === 200 ? r.body.state : undefined;
  }, 15_000, `desired state of ${id}`);

test('an env whose keys and values together pass the cap is a 400 naming env; one just under it is accepted', async () => {
  const value = 'v'.repeat(30_000);
  const over = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], env: { A: value, B: value, C: value } } });
  assert.equal(over.status, 400, over.text);
  assert.deepEqual(over.body.error.details.map((d: { field: string }) => d.field), ['env']);
  assert.match(over.body.error.details[0].message, /65536 bytes/);
  // Multi-byte characters count as bytes, not characters.
  const wide = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], env: { A: 'é'.repeat(20_000), B: 'é'.repeat(20_000) } } });
  assert.equal(wide.status, 400, wide.text);
  const under = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], env: { A: value, B: value } } });
  assert.equal(under.status, 202, under.text);
});

test('readOnlyRootFilesystem is a per-deployment option (default false) that travels to krane', async () => {
  const bad = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], readOnlyRootFilesystem: 'yes' } });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body.error.details.map((d: { field: string }) => d.field), ['readOnlyRootFilesystem']);

  const plain = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION] } });
  assert.equal(plain.status, 202, plain.text);
  assert.equal((await desired(plain.body.id)).readOnlyRootFilesystem, false);
  const ro = await t.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], readOnlyRootFilesystem: true } });
  assert.equal(ro.status, 202, ro.text);
  assert.equal((await desired(ro.body.id)).readOnlyRootFilesystem, true);
  assert.equal((await t.api(`/v1/deployments/${ro.body.id}`)).body.readOnlyRootFilesystem, true);
});

test('a rollback copies every field of the spec', async () => {
  const spec = {
    image: 'registry.local/app:v7',
    regions: [REGION],
    replicas: 3,
    cpuMillicores: 300,
    memoryMib: 300,
    port: 9000,
    command: ['node', 'server.js'],
    env: { TOKEN: 'secret-value', MODE: 'prod' },
    readOnlyRootFilesystem: true,
  };
  const first = await t.api('/v1/deployments', { body: spec });
  assert.equal(first.status, 202, first.text);
  const rb = await t.api(`/v1/deployments/${first.body.id}/rollback`, { method: 'POST' });
  assert.equal(rb.status, 202, rb.text);
  const copy = (await t.api(`/v1/deployments/${rb.body.id}`)).body;
  const { env, ...shown } = spec;
  for (const [k, v] of Object.entries(shown)) assert.deepEqual(copy[k], v, k);
  assert.deepEqual(copy.envKeys, Object.keys(env).sort());
  assert.equal(copy.environmentId, 'default');
  assert.equal(copy.rolledBackFrom, first.body.id);
  // krane gets the values themselves.
  const state = await desired(rb.body.id);
  assert.deepEqual(state.env, env);
  assert.equal(state.readOnlyRootFilesystem, true);
});
