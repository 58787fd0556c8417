// One connection to ctrl's live event socket (GET /v1/events) for a command that follows
// something (`deploy --wait`, `rollout status --watch`). The server greets every client with
// a `hello`; a socket that cannot open, closes under us, or stays silent past the greeting's
// deadline is lost, and the caller hears it once (it then relies on its periodic GET and tells
// the user). One listener of each kind per socket, whatever the length of the watch.
import type WebSocket from 'ws';
import type { ApiClient } from './client';
import type { LiveEvent } from '../live-events';

export interface LiveHandlers {
  onEvent(e: LiveEvent): void;
  /** Called at most once, with a short reason, unless close() came first. */
  onLost(reason: string): void;
  /** The greeting arrived: events flow. */
  onHello?(): void;
}

export interface LiveSocket {
  readonly opened: boolean;
  close(): void;
}

/** The reason a ws error gives, without its stack ("Unexpected server response: 401"). */
const reasonOf = (err: Error & { code?: string }) => err.code ?? err.message;

export function openLive(client: ApiClient, query: Record<string, string>, helloTimeoutMs: number, h: LiveHandlers): LiveSocket {
  const ws: WebSocket = client.events(query);
  let done = false;
  let opened = false;
  const lost = (reason: string) => {
    if (done) return;
    done = true;
    clearTimeout(helloTimer);
    ws.removeAllListeners();
    ws.on('error', () => {});
    ws.terminate();
    h.onLost(reason);
  };
  const helloTimer = setTimeout(() => lost(`no greeting within ${helloTimeoutMs} ms`), helloTimeoutMs);
  ws.on('open', () => (opened = true));
  ws.on('message', (data) => {
    let e: LiveEvent | { type: 'hello' };
    try {
      e = JSON.parse(String(data)) as LiveEvent | { type: 'hello' };
    } catch {
      return;
    }
    if (e.type === 'hello') {
      clearTimeout(helloTimer);
      h.onHello?.();
      return;
    }
    h.onEvent(e);
  });
  ws.on('error', (err) => lost(reasonOf(err)));
  ws.on('close', (code) => lost(`the socket closed with code ${code}`));
  return {
    get opened() {
      return opened;
    },
    close() {
      if (done) return;
      done = true;
      clearTimeout(helloTimer);
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
    },
  };
}
