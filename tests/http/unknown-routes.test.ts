// Unknown routes and cut requests (issue 26 item 4): an unknown path is answered from its
// headers alone, 401 without a valid credential and 404 with one, before any of a body is read
// (it used to parse up to 4 MiB first); a client that resets its connection mid-body is a client
// going away, not "the database is unavailable".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/wait';
import { captureLogger, rawConnect, testCtrl } from './helpers';

const log = captureLogger('debug');
const t = await testCtrl({ requestTimeout: '30s' }, { logger: log.logger });

/** Sends headers announcing a 4 MiB body and only its first bytes; returns the raw answer. */
async function halfSent(path: string, token: string | null): Promise<{ answer: string; closed: boolean }> {
  const c = await rawConnect(t.url);
  const auth = token ? `Authorization: Bearer ${token}\r\n` : '';
  c.socket.write(`POST ${path} HTTP/1.1\r\nHost: ctrl\r\n${auth}Content-Type: application/json\r\nContent-Length: 4194304\r\n\r\n{"a":"`);
  await until(() => /\r\n\r\n/.test(c.received()), 5_000, `an answer to ${path} while its body is still unsent`);
  await until(() => c.closed(), 5_000, `the connection of ${path} closed instead of draining the body`);
  return { answer: c.received(), closed: c.closed() };
}

for (const path of ['/v1/nope', '/v1/cluster/nope', '/', '/nope/deeper']) {
  test(`POST ${path}: 401 without a credential, 404 with one, before the body is read`, async () => {
    assert.match((await halfSent(path, null)).answer, /^HTTP\/1\.1 401 /);
    assert.match((await halfSent(path, 'wrong-token-wrong-token-wrong')).answer, /^HTTP\/1\.1 401 /);
    assert.match((await halfSent(path, t.adminToken)).answer, /^HTTP\/1\.1 404 /);
    assert.match((await halfSent(path, t.agentToken)).answer, /^HTTP\/1\.1 404 /);
  });
}

test('GET of an unknown path with a credential is a 404 in the standard shape; the web view and probes stay open', async () => {
  const r = await t.api('/v1/nope');
  assert.equal(r.status, 404);
  assert.equal(r.body.error.code, 'ERR_NOT_FOUND');
  assert.equal((await t.api('/v1/nope', { token: null })).status, 401);
  assert.equal((await t.api('/livez', { token: null })).status, 200);
});

test('a client that resets its connection mid-body is not logged as a database outage', async () => {
  const from = log.lines.length;
  const c = await rawConnect(t.url);
  c.socket.write(`POST /v1/deployments HTTP/1.1\r\nHost: ctrl\r\nAuthorization: Bearer ${t.adminToken}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"image":"`);
  // Once ctrl has the request (and so reads its body), reset (RST, not FIN) as a crashing
  // client does. The evidence it has it: a request sent on another connection after these bytes
  // were written is answered, and ctrl reads its sockets in the order their bytes arrived.
  await new Promise<void>((r) => c.socket.write('', () => r()));
  assert.equal((await fetch(`${t.url}/livez`)).status, 200);
  c.socket.resetAndDestroy();
  const lines = () => log.lines.slice(from).map((l) => JSON.parse(l) as { msg: string; level: number });
  await until(() => lines().some((l) => l.msg === 'client closed the request' || l.msg === 'database unavailable'), 10_000, 'ctrl noticed the reset');
  assert.deepEqual(lines().filter((l) => l.msg === 'database unavailable' || l.level >= 40).map((l) => l.msg), []);
});
