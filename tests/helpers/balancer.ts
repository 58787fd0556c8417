// A round-robin TCP balancer over ctrl replicas, as a load balancer in front of them would be:
// each new connection goes to the next port `ports()` lists (the live replicas, asked per
// connection, so a replica taken out of the list gets no new connections). Existing
// connections to a replica that dies are cut with it, and the client reconnects through here.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export async function balancer(ports: () => number[]): Promise<{ url: string; close(): void }> {
  let next = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const live = ports();
    if (live.length === 0) return void client.destroy();
    const upstream = connect(live[next++ % live.length]!, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  // A real load balancer's accept queue is deep: with Node's default (511), 5,000 agents
  // reconnecting at once after a replica dies had their SYNs dropped and waited 1-3 s of retransmits.
  await new Promise<void>((r) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
