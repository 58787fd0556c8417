// Work before auth and unbounded connections (issue 16 item 4): the admin token is checked
// before a body is read; a request must arrive within --request-timeout; connections are
// capped; long polls and the event WebSocket still outlive the request timeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import WebSocket from 'ws';
import { ConfigError, loadConfig } from '../../src/config';
import { events } from '../../src/store';
import { until } from '../helpers/wait';
import { rawConnect, testCtrl } from './helpers';

const REQUEST_TIMEOUT_MS = 1000;
const t = await testCtrl({ requestTimeout: `${REQUEST_TIMEOUT_MS}ms` });

test('a body is not parsed before the token is checked: `{bad` without a token is a 401', async () => {
  const r = await t.api('/v1/deployments', { body: '{bad', token: null });
  assert.equal(r.status, 401, r.text);
  assert.equal(r.body.error.code, 'ERR_AUTH_UNAUTHORIZED');
  const wrong = await t.api('/v1/deployments', { body: '{bad', token: 'x'.repeat(32) });
  assert.equal(wrong.status, 401, wrong.text);
});

test('a 4 MB body without a token is answered 401 before it is sent, and the connection closed', async () => {
  const c = await rawConnect(t.url);
  c.socket.write('POST /v1/deployments HTTP/1.1\r\nHost: ctrl\r\nContent-Type: application/json\r\nContent-Length: 4194304\r\n\r\n{"image":"');
  await until(() => /^HTTP\/1\.1 401 /.test(c.received()), 10_000, 'a 401 while the body is still unsent');
  await until(() => c.closed(), 10_000, 'the connection closed instead of draining 4 MB');
});

test('a request whose body stalls is cut once --request-timeout has passed', async () => {
  const c = await rawConnect(t.url);
  c.socket.write(`POST /v1/deployments HTTP/1.1\r\nHost: ctrl\r\nAuthorization: Bearer ${t.adminToken}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ima`);
  await until(() => c.closed(), 15_000, 'the stalled request closed');
  assert.match(c.received(), /^HTTP\/1\.1 408 /);
});

test('a long poll of the feed outlives the request timeout and ends with its end line', async () => {
  const r = await fetch(`${t.url}/v1/cluster/changes?wait=3`, { headers: { authorization: `Bearer ${t.agentToken}` } });
  assert.equal(r.status, 200);
  const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as { type: string });
  assert.equal(lines[0]!.type, 'snapshot_begin');
  assert.equal(lines.at(-1)!.type, 'end', 'the stream ran its whole wait and ended cleanly');
});

test('the event WebSocket outlives the request timeout', async () => {
  const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/events`, { headers: { authorization: `Bearer ${t.adminToken}` } });
  const got: string[] = [];
  ws.on('message', (d) => got.push(String(d)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  try {
    // Time must pass beyond the request timeout for this to prove anything.
    await delay(REQUEST_TIMEOUT_MS * 2);
    await events.publishEvent(t.db.sql, { type: 'rollout.wave', state: 'in_progress', wave: 0, waves: 1, succeeded: 0, failed: 0 });
    await until(() => got.some((m) => m.includes('rollout.wave')), 10_000, 'event after the timeout');
    assert.equal(ws.readyState, WebSocket.OPEN);
  } finally {
    ws.close();
  }
});

test('connections beyond --max-connections are closed at once; a freed slot is usable again', async () => {
  const small = await testCtrl({ maxConnections: 3 });
  const held = [];
  for (let i = 0; i < 3; i++) {
    const c = await rawConnect(small.url);
    c.socket.write('GET /livez HTTP/1.1\r\nHost: ctrl\r\n\r\n');
    await until(() => c.received().includes('"ok"'), 10_000, `connection ${i} served`);
    held.push(c);
  }
  const extra = await rawConnect(small.url);
  extra.socket.write('GET /livez HTTP/1.1\r\nHost: ctrl\r\n\r\n');
  await until(() => extra.closed(), 10_000, 'the connection over the cap closed');
  assert.equal(extra.received(), '', 'and was never served');
  held[0]!.socket.destroy();
  await until(async () => (await fetch(`${small.url}/livez`, { headers: { connection: 'close' } })).status === 200, 10_000, 'served again after a slot freed');
});

test('configuration: timeouts and the connection cap are options with defaults; the idle timeout must outlast waiting calls', () => {
  const base = { databaseUrl: 'postgres://x/y', adminToken: 'a'.repeat(16) };
  const cfg = loadConfig('ctrl', base, {});
  assert.equal(cfg.requestTimeout, 30_000);
  assert.equal(cfg.idleTimeout, 15 * 60_000);
  assert.equal(cfg.maxConnections, 10_000);
  const env = loadConfig('ctrl', base, { UNKEY_INFRA_REQUEST_TIMEOUT: '5s', UNKEY_INFRA_MAX_CONNECTIONS: '50' });
  assert.equal(env.requestTimeout, 5000);
  assert.equal(env.maxConnections, 50);
  assert.throws(
    () => loadConfig('ctrl', { ...base, idleTimeout: '5m', sentinelTimeout: '10m', maxConnections: '0' }, {}),
    (err: unknown) =>
      err instanceof ConfigError &&
      err.problems.some((p) => p.startsWith('--idle-timeout') && p.includes('--sentinel-timeout')) &&
      err.problems.some((p) => p.startsWith('--max-connections')),
  );
});
