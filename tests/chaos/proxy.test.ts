import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { FaultProxy } from '../../bench/chaos/proxy';
import { until } from '../helpers/wait';

/** An upstream that echoes with a prefix, so tests see which upstream answered. */
async function echo(prefix: string): Promise<{ server: Server; port: number; sockets: Set<Socket>; received: () => number }> {
  const sockets = new Set<Socket>();
  let received = 0;
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    s.on('data', (d) => {
      received += d.length;
      s.write(prefix + d.toString());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { server, port: (server.address() as { port: number }).port, sockets, received: () => received };
}

async function proxyTo(...ports: number[]): Promise<FaultProxy> {
  const p = new FaultProxy(ports.map((port) => ({ host: '127.0.0.1', port })));
  await p.listen();
  after(() => p.close());
  return p;
}

interface Client {
  socket: Socket;
  received: () => string;
  closed: () => boolean;
}

async function client(port: number): Promise<Client> {
  const socket = connect(port, '127.0.0.1');
  let data = '';
  let closed = false;
  socket.on('data', (d) => (data += d.toString()));
  socket.on('close', () => (closed = true));
  socket.on('error', () => {});
  await new Promise<void>((r) => socket.once('connect', () => r()));
  after(() => socket.destroy());
  return { socket, received: () => data, closed: () => closed };
}

/** An echo upstream behind a proxy, and a client whose first byte ('x') has made the round trip. */
async function echoedOnce(): Promise<{ up: Awaited<ReturnType<typeof echo>>; p: FaultProxy; c: Client }> {
  const up = await echo('');
  const p = await proxyTo(up.port);
  const c = await client(p.port);
  c.socket.write('x');
  await until(() => c.received() === 'x', 5_000, 'first echo');
  return { up, p, c };
}

test('pass: bytes flow both ways', async () => {
  const up = await echo('a:');
  const p = await proxyTo(up.port);
  const c = await client(p.port);
  c.socket.write('hello');
  await until(() => c.received() === 'a:hello', 5_000, 'echo');
});

test('delay: chunks arrive late and in order', async () => {
  const { up, p, c } = await echoedOnce();
  p.delay(100);
  const t0 = Date.now();
  for (const ch of ['1', '2', '3']) c.socket.write(ch);
  await until(() => c.received() === 'x123', 5_000, 'delayed echo');
  // Both directions are delayed, so one round trip waits at least twice the delay.
  assert.ok(Date.now() - t0 >= 190, `round trip took ${Date.now() - t0} ms`);
});

test('healing while a chunk is delayed keeps the byte order (TCP never reorders; the driver read garbage when we did)', async () => {
  const { up, p, c } = await echoedOnce();
  // The heal and the second write come once '1' is seen waiting out its delay, in the same
  // turn of the event loop; 3 s leaves '2' ample time to reach the proxy before '1' is out.
  p.delay(3_000);
  c.socket.write('1');
  await until(() => p.delayedChunks === 1, { what: "'1' waiting out its delay in the proxy" });
  p.pass();
  c.socket.write('2');
  await until(() => c.received().length === 3, 5_000, 'both echoed');
  assert.equal(c.received(), 'x12');
});

test('a black hole that starts while a chunk is delayed holds it, in order, until it ends', async () => {
  const { up, p, c } = await echoedOnce();
  p.delay(100);
  const t0 = Date.now();
  c.socket.write('1');
  // The chunk reaches the proxy and waits out its delay; the black hole starts meanwhile.
  await until(() => p.delayedChunks === 1, { what: "'1' waiting out its delay in the proxy" });
  p.blackhole();
  // Evidence the delayed chunk's timer ran into the black hole: the chunk is held, and only
  // once its delay was over (a chunk that arrived after blackhole() would be held at once).
  await until(() => p.heldBytes === 1, 5_000, 'the delayed chunk held');
  assert.ok(Date.now() - t0 >= 95, `held after ${Date.now() - t0} ms, at the end of its delay`);
  assert.equal(up.received(), 1, 'nothing crossed the black hole');
  c.socket.write('2');
  p.pass();
  await until(() => c.received().length === 3, 5_000, 'both echoed');
  assert.equal(c.received(), 'x12');
});

test('cut: every open connection is closed at once', async () => {
  const up = await echo('');
  const p = await proxyTo(up.port);
  const a = await client(p.port);
  const b = await client(p.port);
  await until(() => p.openConnections === 2, 5_000, 'two connections');
  p.cut();
  await until(() => a.closed() && b.closed(), 5_000, 'both closed');
  // New connections still work: a cut is not a partition.
  const c = await client(p.port);
  c.socket.write('again');
  await until(() => c.received() === 'again', 5_000, 'new connection echoes');
});

test('cutMidChunk: the next chunk from upstream arrives in part, then the connection closes', async () => {
  const up = await echo('');
  const p = await proxyTo(up.port);
  const c = await client(p.port);
  c.socket.write('ab');
  await until(() => c.received() === 'ab', 5_000, 'first echo');
  p.cutMidChunk();
  c.socket.write('{"type":"change","n":1}\n');
  await until(() => c.closed(), 5_000, 'closed');
  const rest = c.received().slice(2);
  assert.ok(rest.length > 0 && rest.length < '{"type":"change","n":1}\n'.length, `got ${JSON.stringify(rest)}`);
});

test('blackhole: nothing moves until pass, then the held bytes flow', async () => {
  const up = await echo('');
  const p = await proxyTo(up.port);
  const c = await client(p.port);
  p.blackhole();
  c.socket.write('held');
  // A new connection is accepted but not connected upstream.
  const d = await client(p.port);
  d.socket.write('late');
  // Positive evidence that nothing moved: the proxy holds both writes, the upstream got none.
  await until(() => p.heldBytes === 'held'.length + 'late'.length, 5_000, 'both writes held');
  assert.equal(up.received(), 0);
  assert.equal(c.received(), '');
  assert.equal(up.sockets.size, 1);
  p.pass();
  await until(() => c.received() === 'held' && d.received() === 'late', 5_000, 'held bytes delivered');
  assert.equal(up.sockets.size, 2);
});

test('several upstreams: connections alternate, and a refusing upstream is skipped', async () => {
  const a = await echo('a:');
  const b = await echo('b:');
  const p = await proxyTo(a.port, b.port);
  const seen: string[] = [];
  for (let i = 0; i < 2; i++) {
    const c = await client(p.port);
    c.socket.write('x');
    await until(() => c.received().length > 0, 5_000, 'echo');
    seen.push(c.received()[0]!);
  }
  assert.deepEqual(seen.sort(), ['a', 'b']);
  // b goes away: every new connection reaches a.
  for (const s of b.sockets) s.destroy();
  await new Promise<void>((r) => b.server.close(() => r()));
  for (let i = 0; i < 3; i++) {
    const c = await client(p.port);
    c.socket.write('y');
    await until(() => c.received() === 'a:y', 5_000, 'failover to a');
  }
});
