// The error handler logs a failure's code, SQLSTATE, route and request id, never what the
// request carried or what a database error quotes of it (issue 26: a bad jsonb put a whole env,
// secrets included, into ctrl's error log).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { buildCtrlApp } from '../../src/http';
import { testDb } from '../helpers/db';
import { captureLogger } from './helpers';

const SECRET = 'sk_live_handler_marker_93Qz';
const { sql } = await testDb();
const log = captureLogger('info');
const { app } = await buildCtrlApp({
  sql,
  logger: log.logger,
  routes: [
    (a) => {
      // A statement that fails on the value it was given, the way a jsonb insert of a bad env did.
      a.post('/boom/db', async (req) => sql`SELECT ${(req.body as { v: string }).v}::int AS n`);
      a.post('/boom/bug', async (req) => {
        throw new Error(`bug while handling ${(req.body as { v: string }).v}`);
      });
    },
  ],
});
after(() => app.close());

test('a database error is logged by SQLSTATE and route, without its message or detail', async () => {
  const r = await app.inject({ method: 'POST', url: '/boom/db', payload: { v: `{"STRIPE_KEY":"${SECRET}"}` } });
  assert.equal(r.statusCode, 500);
  assert.ok(!r.body.includes(SECRET));
  const line = log.lines.map((l) => JSON.parse(l)).find((l) => l.route === '/boom/db');
  assert.ok(line, `a line for the route: ${log.lines.join('')}`);
  assert.equal(line.sqlstate, '22P02');
  assert.ok(line.requestId, 'the request id is on the line');
  assert.deepEqual(log.lines.filter((l) => l.includes(SECRET)), []);
});

test('an unexpected error is logged by class, route and frames, without its message', async () => {
  const r = await app.inject({ method: 'POST', url: '/boom/bug', payload: { v: SECRET } });
  assert.equal(r.statusCode, 500);
  const line = log.lines.map((l) => JSON.parse(l)).find((l) => l.route === '/boom/bug');
  assert.ok(line, 'a line for the route');
  assert.equal(line.errorClass, 'Error');
  assert.match(line.frames, /error-handler\.test\.ts/);
  assert.deepEqual(log.lines.filter((l) => l.includes(SECRET)), []);
});
