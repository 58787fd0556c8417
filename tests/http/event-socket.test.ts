// The event WebSocket's limits (issue 26 item 5): the credential comes by header or by the
// `base64url.bearer.<token>` subprotocol only (never ?token=, never echoed back), sockets are
// pinged and one that stops answering is dropped, one token holds at most
// EVENT_SOCKETS_PER_TOKEN sockets (429 past it), and a client message is at most 64 KiB.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { EVENT_SOCKETS_PER_TOKEN } from '../../src/http/api/events';
import { until } from '../helpers/wait';
import { testCtrl } from './helpers';

const PING_MS = 150;
const t = await testCtrl({}, { events: { pingIntervalMs: PING_MS } });
const url = `${t.url.replace('http', 'ws')}/v1/events`;
const b64 = (s: string) => Buffer.from(s).toString('base64url');
const bearer = (token: string) => `base64url.bearer.${b64(token)}`;

type Opened = { ws: WebSocket; got: string[] };
function open(opts: { query?: string; protocols?: string[]; headers?: Record<string, string>; autoPong?: boolean } = {}): Promise<Opened> {
  const ws = new WebSocket(url + (opts.query ?? ''), opts.protocols ?? [], { headers: opts.headers, autoPong: opts.autoPong ?? true });
  const got: string[] = [];
  ws.on('message', (d) => got.push(String(d)));
  after(() => ws.terminate());
  return new Promise((resolve, reject) => {
    ws.on('error', reject);
    ws.once('close', (code) => reject(new Error(`closed ${code} before it opened`)));
    ws.once('open', () => resolve({ ws, got }));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`status ${res.statusCode}`), { status: res.statusCode })));
  });
}
const closed = (ws: WebSocket) => new Promise<number>((resolve) => (ws.readyState === WebSocket.CLOSED ? resolve(-1) : ws.once('close', (code) => resolve(code))));

test('?token= is refused even with the right token; header and subprotocol are accepted', async () => {
  await assert.rejects(open({ query: `?token=${encodeURIComponent(t.adminToken)}` }), (e: any) => e.status === 401);
  const byHeader = await open({ headers: { authorization: `Bearer ${t.adminToken}` } });
  await until(() => byHeader.got.includes('{"type":"hello"}'), 5_000, 'hello by header');
  const byProtocol = await open({ protocols: ['unkey-infra.events', bearer(t.adminToken)] });
  assert.equal(byProtocol.ws.protocol, 'unkey-infra.events');
  await until(() => byProtocol.got.includes('{"type":"hello"}'), 5_000, 'hello by subprotocol');
  byHeader.ws.close();
  byProtocol.ws.close();
});

test('the credential subprotocol is never echoed back, even when it is the only one offered', async () => {
  // The server selects none, so a client offering nothing else fails the handshake (RFC 6455
  // 4.1): a client must offer unkey-infra.events beside the credential, as the web view does.
  const ws = new WebSocket(url, [bearer(t.adminToken)]);
  let selected: string | undefined;
  ws.once('upgrade', (res) => (selected = String(res.headers['sec-websocket-protocol'] ?? '')));
  const failed = await new Promise<string>((resolve) => {
    ws.once('error', (e) => resolve(e.message));
    ws.once('open', () => resolve('opened'));
  });
  assert.equal(selected, '', 'the server selected the credential as the protocol');
  assert.match(failed, /no subprotocol/);
});

test('a client message over 64 KiB closes the socket with 1009 (message too big)', async () => {
  const { ws } = await open({ headers: { authorization: `Bearer ${t.adminToken}` } });
  const code = closed(ws);
  ws.send('x'.repeat(64 * 1024 + 1));
  assert.equal(await code, 1009);
});

test('a socket that stops answering pings is dropped; one that answers stays', async () => {
  const silent = await open({ headers: { authorization: `Bearer ${t.adminToken}` }, autoPong: false });
  const live = await open({ headers: { authorization: `Bearer ${t.adminToken}` } });
  let pings = 0;
  live.ws.on('ping', () => pings++);
  const code = closed(silent.ws);
  await until(() => silent.ws.readyState === WebSocket.CLOSED, 10 * PING_MS + 5_000, 'the silent socket dropped');
  await code;
  await until(() => pings >= 4, 20 * PING_MS, 'pings keep coming');
  assert.equal(live.ws.readyState, WebSocket.OPEN, 'the answering socket is still open');
  live.ws.close();
});

test(`one token holds at most ${EVENT_SOCKETS_PER_TOKEN} sockets: the next is a 429 until one closes`, async () => {
  const held: Opened[] = [];
  for (let i = 0; i < EVENT_SOCKETS_PER_TOKEN; i++) held.push(await open({ protocols: ['unkey-infra.events', bearer(t.adminToken)] }));
  await assert.rejects(open({ headers: { authorization: `Bearer ${t.adminToken}` } }), (e: any) => e.status === 429);
  const first = held.shift()!;
  first.ws.close();
  await closed(first.ws);
  // The server sees the close a moment later; then there is room again.
  const next = await until(() => open({ headers: { authorization: `Bearer ${t.adminToken}` } }), 5_000, 'a socket once one closed');
  assert.equal(next.ws.readyState, WebSocket.OPEN);
  for (const h of [...held, next]) h.ws.close();
});
