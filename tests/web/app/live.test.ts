// The event socket's client: backoff, the token as a subprotocol, and the connection's states
// driven by a fake socket and fake timers (no network, no clock).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventsProtocols, eventsUrl, LiveConnection, reconnectDelay, RECONNECT_MAX_MS, type LiveState, type SocketLike } from '../../../src/web/app/live';

test('reconnect delays double from 500 ms to a 30 s cap, with ±20% jitter', () => {
  const mid = () => 0.5;
  assert.deepEqual([1, 2, 3, 4, 6, 7, 20].map((a) => reconnectDelay(a, mid)), [500, 1000, 2000, 4000, 16000, RECONNECT_MAX_MS, RECONNECT_MAX_MS]);
  assert.equal(reconnectDelay(1, () => 0), 400);
  assert.equal(reconnectDelay(1, () => 1), 600);
});

test('the token goes in a subprotocol, base64url without padding, never in the URL', () => {
  assert.equal(eventsUrl({ protocol: 'https:', host: 'ctrl:7070' }), 'wss://ctrl:7070/v1/events');
  assert.equal(eventsUrl({ protocol: 'http:', host: 'h' }), 'ws://h/v1/events');
  const [ours, bearer] = eventsProtocols('t?/+é');
  assert.equal(ours, 'unkey-infra.events');
  assert.equal(bearer, `base64url.bearer.${Buffer.from('t?/+é').toString('base64url')}`);
  assert.match(bearer!, /^[A-Za-z0-9._-]+$/, 'only characters a subprotocol may carry');
});

function harness(authorized = true) {
  const sockets: SocketLike[] = [];
  const timers: { fn: () => void; ms: number }[] = [];
  const states: LiveState[] = [];
  const events: string[] = [];
  let opens = 0;
  let refused = 0;
  const conn = new LiveConnection({
    url: 'ws://x/v1/events',
    protocols: ['p'],
    onEvent: (e) => events.push(e.type),
    onState: (s) => states.push(s),
    onOpen: () => opens++,
    stillAuthorized: async () => authorized,
    onUnauthorized: () => refused++,
    connect: () => {
      const s: SocketLike = { onopen: null, onmessage: null, onclose: null, onerror: null, close() {} };
      sockets.push(s);
      return s;
    },
    timers: { set: (fn, ms) => timers.push({ fn, ms }), clear: () => {} },
    random: () => 0.5,
    now: () => 0,
  });
  return { conn, sockets, timers, states, events, opens: () => opens, refused: () => refused };
}

const settle = () => new Promise((r) => setImmediate(r));

test('hello makes it live and triggers a refetch; a drop reconnects with backoff and refetches again', async () => {
  const h = harness();
  h.conn.start();
  h.sockets[0]!.onmessage!({ data: '{"type":"hello"}' });
  h.sockets[0]!.onmessage!({ data: '{"type":"deployment.status","deploymentId":"d"}' });
  h.sockets[0]!.onmessage!({ data: 'not json' });
  assert.deepEqual([h.states.map((s) => s.kind), h.events, h.opens()], [['connecting', 'live'], ['deployment.status'], 1]);
  h.sockets[0]!.onclose!({});
  await settle();
  assert.deepEqual(h.states.at(-1), { kind: 'reconnecting', attempt: 1, retryAt: 500 });
  h.timers.shift()!.fn();
  h.sockets[1]!.onclose!({});
  await settle();
  assert.equal(h.timers[0]!.ms, 1000, 'the second attempt waits longer');
  h.timers.shift()!.fn();
  h.sockets[2]!.onmessage!({ data: '{"type":"hello"}' });
  assert.equal(h.opens(), 2, 'views refetch after the reconnect');
  h.sockets[2]!.onclose!({});
  await settle();
  assert.equal(h.timers[0]!.ms, 500, 'a good connection resets the backoff');
  h.conn.stop();
  assert.equal(h.states.at(-1)!.kind, 'stopped');
});

test('a socket refused before hello with a token ctrl no longer takes signs out instead of retrying', async () => {
  const h = harness(false);
  h.conn.start();
  h.sockets[0]!.onclose!({});
  await settle();
  assert.deepEqual([h.refused(), h.timers.length, h.states.at(-1)!.kind], [1, 0, 'stopped']);
});
