// A small TCP fault proxy of the chaos harness (node:net only), placed between krane and ctrl
// and between ctrl and PostgreSQL. Modes:
// - pass: bytes flow both ways (optionally delayed by `delayMs` per chunk, order kept);
// - cut(): every open connection is destroyed now, the way a reset or a dead peer looks;
// - cutMidChunk(): the next chunk from upstream on each connection is forwarded only in part
//   and then the connection is destroyed, so a streamed NDJSON line arrives cut in the middle;
// - blackhole: nothing moves: bytes read from either side are held, new connections are
//   accepted but not connected upstream, like a partitioned network where TCP keeps
//   retransmitting. Leaving it lets the held bytes through, as retransmission would.
// Several upstreams: a new connection goes to them in turn and tries the next one when one
// refuses, the way a load balancer in front of two ctrl replicas behaves.
import { createServer, connect, type Server, type Socket } from 'node:net';

export type ProxyMode = 'pass' | 'blackhole';

export interface Upstream {
  host: string;
  port: number;
}

interface Pair {
  client: Socket;
  upstream?: Socket;
  /** An upstream connection is being made (so pass() does not dial a second one). */
  dialing: boolean;
  /** Set by cutMidChunk: the next upstream chunk is truncated and the pair destroyed. */
  cutNext: boolean;
  /** Chunks held while the proxy black-holes, per direction. */
  held: { toUpstream: Buffer[]; toClient: Buffer[] };
  /** A chunk of this direction is waiting out its delay (its source is paused until then). */
  delaying: { toUpstream: boolean; toClient: boolean };
}

export class FaultProxy {
  readonly server: Server;
  #pairs = new Set<Pair>();
  #mode: ProxyMode = 'pass';
  #delayMs = 0;
  #next = 0;
  #port = 0;
  /** Connections accepted and bytes forwarded, for tests and the harness's report. */
  readonly stats = { connections: 0, cuts: 0, bytesToClient: 0 };

  constructor(private upstreams: Upstream[]) {
    this.server = createServer((client) => this.#accept(client));
  }

  async listen(port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    const a = this.server.address();
    this.#port = typeof a === 'object' && a ? a.port : 0;
    return this.#port;
  }

  get port(): number {
    return this.#port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  get openConnections(): number {
    return this.#pairs.size;
  }

  /** Bytes held back by a black hole, both directions. */
  get heldBytes(): number {
    let n = 0;
    for (const p of this.#pairs) for (const c of [...p.held.toUpstream, ...p.held.toClient]) n += c.length;
    return n;
  }

  /** Directions (of all connections) with a chunk waiting out its delay now: what a test
   *  waits for before changing mode "while a chunk is delayed". */
  get delayedChunks(): number {
    let n = 0;
    for (const p of this.#pairs) n += Number(p.delaying.toUpstream) + Number(p.delaying.toClient);
    return n;
  }

  /** Back to plain forwarding: held bytes flow, pending connections connect. */
  pass(): void {
    this.#mode = 'pass';
    this.#delayMs = 0;
    for (const p of this.#pairs) {
      if (!p.upstream && !p.dialing) this.#connectUpstream(p);
      else this.#flushHeld(p);
      // A direction with a chunk still waiting out its delay resumes when that chunk is out.
      if (!p.delaying.toUpstream) p.client.resume();
      if (!p.delaying.toClient) p.upstream?.resume();
    }
  }

  delay(ms: number): void {
    this.#mode = 'pass';
    this.#delayMs = ms;
  }

  blackhole(): void {
    this.#mode = 'blackhole';
  }

  cut(): void {
    this.stats.cuts++;
    for (const p of [...this.#pairs]) this.#destroy(p);
  }

  /** Truncates the next chunk from upstream on every open connection, then cuts it. */
  cutMidChunk(): void {
    this.stats.cuts++;
    for (const p of this.#pairs) p.cutNext = true;
  }

  async close(): Promise<void> {
    for (const p of [...this.#pairs]) this.#destroy(p);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    this.stats.connections++;
    const pair: Pair = { client, dialing: false, cutNext: false, held: { toUpstream: [], toClient: [] }, delaying: { toUpstream: false, toClient: false } };
    this.#pairs.add(pair);
    client.on('error', () => this.#destroy(pair));
    client.on('close', () => this.#destroy(pair));
    client.on('data', (chunk: Buffer) => this.#forward(pair, 'toUpstream', chunk));
    if (this.#mode !== 'blackhole') this.#connectUpstream(pair);
  }

  #connectUpstream(pair: Pair, attempt = 0, base = this.#next++): void {
    const target = this.upstreams[(base + attempt) % this.upstreams.length]!;
    const up = connect(target.port, target.host);
    pair.dialing = true;
    let connected = false;
    up.once('connect', () => {
      connected = true;
      pair.dialing = false;
      pair.upstream = up;
      this.#flushHeld(pair);
    });
    up.on('data', (chunk: Buffer) => this.#forward(pair, 'toClient', chunk));
    up.on('error', () => {
      // A refused connection tries the next upstream once around, then gives up like a
      // balancer with no healthy backend: the client sees its connection closed.
      if (!connected && attempt + 1 < this.upstreams.length && this.#pairs.has(pair)) this.#connectUpstream(pair, attempt + 1, base);
      else this.#destroy(pair);
    });
    up.on('close', () => connected && this.#destroy(pair));
  }

  #forward(pair: Pair, dir: 'toUpstream' | 'toClient', chunk: Buffer): void {
    if (dir === 'toClient' && pair.cutNext) {
      const part = chunk.subarray(0, Math.max(1, Math.floor(chunk.length / 2)));
      pair.client.write(part, () => this.#destroy(pair));
      return;
    }
    const target = dir === 'toUpstream' ? pair.upstream : pair.client;
    if (this.#mode === 'blackhole' || !target) {
      pair.held[dir].push(chunk);
      return;
    }
    if (dir === 'toClient') this.stats.bytesToClient += chunk.length;
    if (this.#delayMs > 0) {
      // Pausing the source while a chunk waits keeps chunks in order without a queue; nothing
      // else may resume it before the chunk is out (pass() once did, and the next chunk
      // overtook this one: TCP never reorders, and the database driver read garbage).
      const source = dir === 'toUpstream' ? pair.client : pair.upstream;
      source?.pause();
      pair.delaying[dir] = true;
      setTimeout(() => {
        pair.delaying[dir] = false;
        // A black hole that began meanwhile holds the chunk too (its source stayed paused, so
        // nothing later of this direction is held before it).
        if (this.#mode === 'blackhole') return void pair.held[dir].push(chunk);
        if (!target.destroyed) target.write(chunk);
        source?.resume();
      }, this.#delayMs);
      return;
    }
    target.write(chunk);
  }

  #flushHeld(pair: Pair): void {
    if (this.#mode === 'blackhole') return;
    const { toUpstream, toClient } = pair.held;
    pair.held = { toUpstream: [], toClient: [] };
    for (const c of toUpstream) pair.upstream?.write(c);
    for (const c of toClient) pair.client.write(c);
  }

  #destroy(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream?.destroy();
  }
}
