// The watcher's HTTP plumbing (src/sync/watcher.ts): one GET of the feed, a body read whole,
// and what a Retry-After asks for.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/**
 * GET with node:http rather than fetch: a feed line is a small chunk, and node streams cost a
 * fraction of what WHATWG body streams do per chunk, which matters with many agents per host.
 *
 * `signal` ends the request only while its response is incomplete. Node's own `signal` option
 * also destroys the socket after the response has arrived whole, while the watcher is still
 * handling its last lines (a handler failing, a handed-over poll closed): that socket may be
 * back in the agent's keep-alive pool by then, where its error had no listener and crashed
 * the process (the handover model test met it), or serving the next poll.
 */
export function get(url: URL, token: string, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    let res: IncomingMessage | undefined;
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { headers: { authorization: `Bearer ${token}` } }, (r) => {
      res = r;
      r.once('end', off);
      resolve(r);
    });
    const onAbort = () => {
      off();
      if (res?.complete) return;
      const reason = signal.reason instanceof Error ? signal.reason : new Error('request aborted');
      req.destroy(reason);
      // The body fails with the same reason now. Left to the socket's close, it would fail with
      // an ECONNRESET error made there, whose stack Node's destroy reads (mapped through source
      // maps when they are on): 2.6% of an agent's CPU in bench:feed, once per handed-over poll.
      // Lines received but not yet read are dropped with it (before, they were still handed out):
      // every abort ends the poll's use of them anyway, and an unhandled one is read again from
      // the committed cursor.
      res?.destroy(reason);
    };
    const off = () => signal.removeEventListener('abort', onAbort);
    signal.addEventListener('abort', onAbort, { once: true });
    req.once('close', off);
    req.on('error', reject);
    req.end();
  });
}

/** Retry-After in seconds (delta-seconds or an HTTP date), at least 1. */
export function retryAfterSeconds(v: string | undefined): number {
  const n = Number(v);
  if (v && Number.isFinite(n)) return Math.max(1, n);
  const at = v ? Date.parse(v) : NaN;
  return Number.isFinite(at) ? Math.max(1, (at - Date.now()) / 1000) : 1;
}

export async function readText(res: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of res) text += chunk;
  return text;
}
