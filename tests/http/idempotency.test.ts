// Idempotency-Key on the calls that create a deployment (issue 35): a client that lost the
// answer sends the call again with the same key and gets the deployment the first call made,
// never a second one; the key is recorded in the same transaction as the deployment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeploymentCreated, RollbackCreated } from '../../src/http/api/openapi-responses';
import { REGION, testCtrl } from './helpers';
import { assertEvery } from '../helpers/assert';

const t = await testCtrl();

async function post(path: string, body: unknown, key?: string) {
  const r = await fetch(t.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as any };
}
const count = async () => (await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployments`)[0]!.n;

test('the same key twice answers with the same deployment and makes one', async () => {
  const before = await count();
  const spec = { image: 'nginx:1.27', regions: [REGION], replicas: 1 };
  const a = await post('/v1/deployments', spec, 'retry-key-0001');
  const b = await post('/v1/deployments', spec, 'retry-key-0001');
  assert.equal(a.status, 202, JSON.stringify(a.body));
  assert.equal(b.status, 202, JSON.stringify(b.body));
  assert.equal(b.body.id, a.body.id);
  // The replay is the documented answer, as strictly as the first (the CLI is typed from it).
  for (const r of [a, b]) assert.ok(DeploymentCreated.safeParse(r.body).success, JSON.stringify(r.body));
  assert.equal(await count(), before + 1);
  // Without a key every call creates, as before.
  const c = await post('/v1/deployments', spec);
  assert.notEqual(c.body.id, a.body.id);
});

test('calls racing with one key make one deployment, and all answer with it', async () => {
  const before = await count();
  const spec = { image: 'nginx:1.27', regions: [REGION], replicas: 1 };
  const answers = await Promise.all(Array.from({ length: 6 }, () => post('/v1/deployments', spec, 'retry-key-race')));
  assertEvery(answers, (r) => r.status === 202, 'every racing call accepted');
  assert.equal(new Set(answers.map((r) => r.body.id)).size, 1);
  assert.equal(await count(), before + 1);
});

test('calls racing with one key and a version make one deployment: the version held by the first is not a 409 for its repeats', async () => {
  const before = await count();
  const spec = { image: 'nginx:1.27', regions: [REGION], replicas: 1, version: 'v-retried' };
  // The repeats' inserts wait on the first's version and fail on it (a 409 of its own) before
  // the key's unique violation could speak: the answer must still be the first's deployment.
  const answers = await Promise.all(Array.from({ length: 6 }, () => post('/v1/deployments', spec, 'retry-key-version')));
  assertEvery(answers, (r) => r.status === 202, `every racing call accepted: ${answers.map((r) => `${r.status} ${r.body.error?.code ?? ''}`).join(', ')}`);
  assert.equal(new Set(answers.map((r) => r.body.id)).size, 1);
  assert.equal(await count(), before + 1);
});

test('a key sent with another request is refused (422), a malformed key is a 400 naming the header; nothing is written', async () => {
  const spec = { image: 'nginx:1.27', regions: [REGION], replicas: 1 };
  assert.equal((await post('/v1/deployments', spec, 'retry-key-0002')).status, 202);
  const before = await count();
  const other = await post('/v1/deployments', { ...spec, replicas: 2 }, 'retry-key-0002');
  assert.equal(other.status, 422, JSON.stringify(other.body));
  assert.equal(other.body.error.code, 'ERR_IDEMPOTENCY_KEY_REUSED');
  const bad = await post('/v1/deployments', spec, 'no spaces allowed');
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body.error.details.map((d: { field: string }) => d.field), ['Idempotency-Key']);
  assert.equal(await count(), before);
});

test('a rollback with a key made twice is one new deployment', async () => {
  const first = await post('/v1/deployments', { image: 'nginx:1.27', regions: [REGION], replicas: 1 });
  const before = await count();
  const a = await post(`/v1/deployments/${first.body.id}/rollback`, {}, 'rollback-key-01');
  const b = await post(`/v1/deployments/${first.body.id}/rollback`, {}, 'rollback-key-01');
  assert.equal(a.status, 202, JSON.stringify(a.body));
  assert.equal(b.body.id, a.body.id);
  for (const r of [a, b]) assert.ok(RollbackCreated.safeParse(r.body).success, JSON.stringify(r.body));
  assert.equal(await count(), before + 1);
});
