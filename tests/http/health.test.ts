import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildCtrlApp } from '../../src/http';
import { createLogger } from '../../src/log';
import { createDb, migrate } from '../../src/store';
import { startPostgres } from '../helpers/postgres';
import { emptyDb, testDb } from '../helpers/db';
import { captureLogger } from './helpers';

const logger = createLogger('silent');

test('/readyz is 200 with the database up and 503 naming the failed check once it stops, its error text only in the log; /livez stays 200', async () => {
  // A server of our own: stopping the shared one would break every other test file.
  const pg = await startPostgres();
  const sql = createDb(pg.adminUrl, { max: 2 });
  const log = captureLogger();
  try {
    await migrate(sql);
    const { app } = await buildCtrlApp({ sql, logger: log.logger });
    try {
      let r = await app.inject({ url: '/readyz' });
      assert.equal(r.statusCode, 200);
      assert.equal(r.json().status, 'ready');
      await pg.stop();
      r = await app.inject({ url: '/readyz' });
      assert.equal(r.statusCode, 503);
      const body = r.json();
      const db = body.checks.find((c: { name: string }) => c.name === 'database');
      assert.equal(db.ok, false);
      // Which check failed and a generic reason; the driver's text (addresses, ports, users)
      // stays out of an unauthenticated answer and goes to the log.
      assert.equal(db.reason, 'error; details in the log');
      const port = new URL(pg.adminUrl).port;
      assert.ok(!r.body.includes(port), r.body);
      const logged = log.lines.find((l) => l.includes('readiness check failed') && l.includes('"check":"database"'));
      assert.ok(logged, 'the detail is logged');
      r = await app.inject({ url: '/livez' });
      assert.equal(r.statusCode, 200);
    } finally {
      await app.close();
    }
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
    await pg.stop();
  }
});

test('/readyz is 503 while migrations are pending, 200 after', async () => {
  const db = await emptyDb();
  const { app } = await buildCtrlApp({ sql: db.sql, logger });
  try {
    let r = await app.inject({ url: '/readyz' });
    assert.equal(r.statusCode, 503);
    assert.match(JSON.stringify(r.json()), /pending migrations: 0001_init\.sql/);
    await migrate(db.sql);
    r = await app.inject({ url: '/readyz' });
    assert.equal(r.statusCode, 200);
  } finally {
    await app.close();
  }
});

test('extra readiness checks are reported; errors map to the JSON error shape', async () => {
  const db = await testDb();
  const { app } = await buildCtrlApp({
    sql: db.sql,
    logger,
    checks: [{ name: 'engine', check: async () => 'workers stopped' }],
    knownCredential: async (token) => token === 'valid-token',
    routes: [
      (a) => {
        a.get('/boom', async () => {
          throw new Error('secret internals');
        });
      },
    ],
  });
  try {
    const r = await app.inject({ url: '/readyz' });
    assert.equal(r.statusCode, 503);
    assert.deepEqual(r.json().checks.find((c: { name: string }) => c.name === 'engine'), { name: 'engine', ok: false, reason: 'workers stopped' });
    const boom = await app.inject({ url: '/boom' });
    assert.equal(boom.statusCode, 500);
    assert.deepEqual(boom.json(), { error: { code: 'ERR_INTERNAL', message: 'internal error', details: [] } });
    // An unknown route is a 401 without a credential (issue 26), a 404 with one.
    assert.equal((await app.inject({ url: '/nope' })).statusCode, 401);
    const missing = await app.inject({ url: '/nope', headers: { authorization: 'Bearer valid-token' } });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error.code, 'ERR_NOT_FOUND');
    const metrics = await app.inject({ url: '/metrics' });
    assert.equal(metrics.statusCode, 200);
    assert.match(metrics.body, /http_request_duration_seconds_bucket\{.*route="\/readyz"/);
  } finally {
    await app.close();
  }
});
