// The live event socket (/v1/events). It reconnects with exponential backoff when lost and
// reports its state so the page can say so. Events sent while it was down are gone: every
// (re)connect is announced (`onOpen`) so views refetch what they show.
// The token travels as a WebSocket subprotocol (`base64url.bearer.<token>`, as Kubernetes does),
// because browsers cannot set headers on a WebSocket: it stays out of URLs and access logs.

export type LiveState =
  | { kind: 'connecting' }
  | { kind: 'live' }
  | { kind: 'reconnecting'; attempt: number; retryAt: number }
  | { kind: 'stopped' };

/** First retry soon (a ctrl restart takes about a second); later ones back off to a cap. */
export const RECONNECT_MIN_MS = 500;
/** Long enough not to hammer a ctrl that is down, short enough that the page recovers soon. */
export const RECONNECT_MAX_MS = 30_000;

/** Delay before reconnect attempt `attempt` (1, 2, …): doubling, capped, with ±20% jitter so a
 *  restarted ctrl is not met by every open page at the same instant. */
export function reconnectDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

export function eventsUrl(loc: { protocol: string; host: string }): string {
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${loc.host}/v1/events`;
}

/** What ctrl selects (it echoes the first offered protocol; the token is never echoed back). */
export const EVENTS_PROTOCOL = 'unkey-infra.events';

/** Subprotocols offered on connect: ours, then the token, base64url without padding. */
export function eventsProtocols(token: string): string[] {
  let bin = '';
  for (const b of new TextEncoder().encode(token)) bin += String.fromCharCode(b);
  const b64 = btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return [EVENTS_PROTOCOL, `base64url.bearer.${b64}`];
}

export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(): void;
}

export interface LiveOptions {
  url: string;
  protocols?: string[];
  onEvent(e: { type: string } & Record<string, unknown>): void;
  onState(s: LiveState): void;
  /** Called on every established connection (its `hello`), the first one included. */
  onOpen(): void;
  /** Asked when a connection closed before its `hello`: a refused handshake looks like any
   *  other failure to a browser, so the page checks its token over HTTP. */
  stillAuthorized(): Promise<boolean>;
  onUnauthorized(): void;
  connect?: (url: string, protocols: string[]) => SocketLike;
  timers?: { set(fn: () => void, ms: number): unknown; clear(h: unknown): void };
  random?: () => number;
  now?: () => number;
}

export class LiveConnection {
  #o: LiveOptions;
  #socket: SocketLike | undefined;
  #timer: unknown;
  #attempt = 0;
  #stopped = false;

  constructor(o: LiveOptions) {
    this.#o = o;
  }

  start(): void {
    this.#stopped = false;
    this.#connect();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#timers().clear(this.#timer);
    this.#timer = undefined;
    const s = this.#socket;
    this.#socket = undefined;
    if (s) {
      s.onclose = s.onmessage = s.onerror = s.onopen = null;
      s.close();
    }
    this.#o.onState({ kind: 'stopped' });
  }

  #timers() {
    return this.#o.timers ?? { set: (fn: () => void, ms: number) => setTimeout(fn, ms), clear: (h: unknown) => clearTimeout(h as number) };
  }

  #connect(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    if (this.#attempt === 0) this.#o.onState({ kind: 'connecting' });
    let greeted = false;
    const socket = (this.#o.connect ?? ((u, p) => new WebSocket(u, p) as unknown as SocketLike))(this.#o.url, this.#o.protocols ?? []);
    this.#socket = socket;
    socket.onmessage = (ev) => {
      let e: { type?: unknown } & Record<string, unknown>;
      try {
        e = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      if (typeof e.type !== 'string') return;
      if (e.type === 'hello') {
        greeted = true;
        this.#attempt = 0;
        this.#o.onState({ kind: 'live' });
        this.#o.onOpen();
        return;
      }
      this.#o.onEvent(e as { type: string } & Record<string, unknown>);
    };
    socket.onerror = () => {
      // A close always follows; it decides what to do.
    };
    socket.onclose = () => {
      if (this.#socket !== socket || this.#stopped) return;
      this.#socket = undefined;
      void this.#retry(greeted);
    };
  }

  async #retry(greeted: boolean): Promise<void> {
    if (!greeted && !(await this.#o.stillAuthorized().catch(() => true))) {
      this.stop();
      this.#o.onUnauthorized();
      return;
    }
    if (this.#stopped) return;
    this.#attempt++;
    const delay = reconnectDelay(this.#attempt, this.#o.random);
    this.#o.onState({ kind: 'reconnecting', attempt: this.#attempt, retryAt: (this.#o.now ?? Date.now)() + delay });
    this.#timer = this.#timers().set(() => this.#connect(), delay);
  }
}
