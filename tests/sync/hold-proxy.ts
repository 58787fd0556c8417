// A TCP proxy in front of ctrl that can hold new connections: a held connection is accepted but
// not passed on until the test releases it, so a test can keep an agent's reconnect pending for
// as long as it likes and make things happen meanwhile (no timing involved). Connections are
// numbered in the order they arrive; the test sees which are open.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { after } from 'node:test';

export interface HoldProxy {
  url: string;
  /** While true, every new connection is held. */
  holding: boolean;
  /** Connections accepted so far (held ones included). */
  readonly arrived: number;
  /** Numbers of the connections held now. */
  held(): number[];
  /** Numbers of the connections whose client side is still open. */
  open(): number[];
  /** Stops holding and passes every held connection on. */
  release(): void;
}

export async function holdProxy(upstream: string): Promise<HoldProxy> {
  const target = new URL(upstream);
  const held = new Map<number, () => void>();
  const open = new Set<number>();
  const sockets = new Set<Socket>();
  let arrived = 0;
  const pass = (client: Socket) => {
    const up = connect(Number(target.port), target.hostname);
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    for (const s of [client, up]) s.on('error', () => (client.destroy(), up.destroy()));
    up.on('close', () => client.destroy());
    client.on('close', () => up.destroy());
    client.pipe(up).pipe(client);
    client.resume();
  };
  const proxy: HoldProxy = {
    url: '',
    holding: false,
    get arrived() {
      return arrived;
    },
    held: () => [...held.keys()],
    open: () => [...open],
    release() {
      proxy.holding = false;
      const waiting = [...held.values()];
      held.clear();
      for (const go of waiting) go();
    },
  };
  const server = createServer((client) => {
    const n = arrived++;
    open.add(n);
    sockets.add(client);
    client.on('close', () => {
      open.delete(n);
      held.delete(n);
      sockets.delete(client);
    });
    client.on('error', () => client.destroy());
    if (!proxy.holding) return pass(client);
    // Bytes the client sends meanwhile (its request) wait in the paused socket.
    client.pause();
    held.set(n, () => pass(client));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  after(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return proxy;
}
