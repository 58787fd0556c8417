// ctrl through PgBouncer in transaction mode (issue 35): the pool goes through Debian's
// PgBouncer 1.18 without prepared statements and without pipelining, LISTEN goes to a direct
// session (--database-direct-url, which tells ctrl its --database-url is such a pooler). The e2e smoke runs through it: deploys in two regions
// (the engine's transactions, row locks and SKIP LOCKED claims, SET LOCAL-free by design), stop
// and start, a rollback, a canary with a pause (durable timers), a sentinel fleet rollout (child
// invocations and awakeables woken by NOTIFY), and the operator views. Without a direct URL,
// ctrl refuses to start instead of losing every notification silently.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { startPgBouncer } from '../../scripts/ha/pgbouncer';
import { testDb } from '../helpers/db';
import { deploymentIn, testStack } from '../helpers/stack';
import { until } from '../helpers/wait';
import { loadConfig, ConfigError } from '../../src/config';
import { startCtrl } from '../../src/modes/ctrl';
import { createLogger } from '../../src/log';
import { createDb } from '../../src/store';
import { assertEvery } from '../helpers/assert';

const db = await testDb();
const direct = new URL(db.url);
const bouncer = await startPgBouncer({
  upstream: { host: direct.hostname, port: Number(direct.port) },
  user: decodeURIComponent(direct.username),
  password: decodeURIComponent(direct.password),
});
after(() => bouncer.stop());
const pooled = bouncer.urlFor(db.name);

/** Transactions PgBouncer has carried for the test database so far. */
async function transactionsThroughPgBouncer(): Promise<number> {
  const admin = postgres(bouncer.adminUrl, { max: 1, fetch_types: false, onnotice: () => {} });
  try {
    const rows = await admin.unsafe('SHOW STATS').simple();
    return Number((rows as unknown as { database: string; total_xact_count: string }[]).find((r) => r.database === db.name)?.total_xact_count ?? 0);
  } finally {
    await admin.end({ timeout: 1 });
  }
}

test('the pool through PgBouncer never pipelines: mixed concurrent queries all finish', { timeout: 120_000 }, async () => {
  // With postgres.js's default pipelining, a query written behind a parameterless one lost its
  // answers in PgBouncer 1.18 and waited for ever: this hung before createDb's pooled mode.
  const pool = createDb(pooled, { listenUrl: db.url, max: 4, applicationName: 'unkey-infra-test' });
  try {
    const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => (i % 2 ? pool`SELECT 1 AS v` : pool`SELECT ${i}::int AS v`)));
    assert.equal(answers.length, 300);
    assertEvery(answers, (r) => r.length === 1, 'each query answered its one row');
  } finally {
    await pool.end({ timeout: 1 });
  }
});

test('through a transaction pooler without --database-direct-url, ctrl refuses to start and says why', async () => {
  const cfg = loadConfig('ctrl', { databaseUrl: pooled, adminToken: 'a'.repeat(32), listen: '127.0.0.1:0', logLevel: 'silent' }, {});
  await assert.rejects(startCtrl(cfg, { logger: createLogger('silent') }), (err: unknown) => {
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(err.message, /--database-direct-url/);
    return true;
  });
});

test('the e2e smoke through PgBouncer in transaction mode, LISTEN direct', { timeout: 240_000 }, async () => {
  const stack = await testStack({ db: { ...db, url: pooled }, ctrl: { settings: { databaseDirectUrl: db.url } } });
  const before = await transactionsThroughPgBouncer();
  const regions = ['us-east-1', 'eu-west-1'];

  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions, replicas: 2 } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.id;
  const ready = await deploymentIn(stack, id, ['ready', 'failed'], 60_000);
  assert.equal(ready.status, 'ready', ready.error);
  assert.equal(ready.instances.length, 4);

  assert.equal((await stack.api(`/v1/deployments/${id}/stop`, { method: 'POST' })).status, 200);
  await deploymentIn(stack, id, ['stopped'], 60_000);
  assert.equal((await stack.api(`/v1/deployments/${id}/start`, { method: 'POST' })).status, 200);
  assert.equal((await deploymentIn(stack, id, ['ready', 'failed'], 60_000)).status, 'ready');

  const rb = await stack.api(`/v1/deployments/${id}/rollback`, { method: 'POST' });
  assert.ok([200, 202].includes(rb.status), JSON.stringify(rb.body));
  const rolled = rb.body.id ?? rb.body.deploymentId;
  assert.equal((await deploymentIn(stack, rolled, ['ready', 'failed'], 60_000)).status, 'ready');

  const canary = await stack.api('/v1/deployments', { body: { image: 'nginx:1.28', regions, replicas: 1, strategy: { type: 'canary', steps: [{ weight: 50, pause: '1s' }] } } });
  assert.equal(canary.status, 202, JSON.stringify(canary.body));
  assert.equal((await deploymentIn(stack, canary.body.id, ['ready', 'failed', 'rolled_back'], 90_000)).status, 'ready');

  const rollout = await stack.api('/v1/sentinel-rollouts', { body: { image: 'sentinel:v2', wavePercentages: [50, 100] } });
  assert.equal(rollout.status, 202, JSON.stringify(rollout.body));
  const done = await until(async () => {
    const c = (await stack.api('/v1/sentinel-rollouts/current')).body;
    return ['completed', 'paused', 'failed'].includes(c.state) ? c : undefined;
  }, 90_000, 'fleet rollout finished');
  assert.equal(done.state, 'completed', JSON.stringify(done));

  const invocations = await stack.api('/v1/invocations');
  assert.equal(invocations.status, 200);
  assert.ok(invocations.body.invocations?.length > 0 || invocations.body.length > 0, 'operator views answer through the pooler');

  // It all went through PgBouncer: hundreds of transactions of this database on its books.
  const carried = (await transactionsThroughPgBouncer()) - before;
  assert.ok(carried > 100, `PgBouncer carried ${carried} transactions`);
});
