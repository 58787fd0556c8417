// The watcher's HTTP plumbing (src/sync/watcher.ts): one GET of the feed, a body read whole,
// and what a Retry-After asks for.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/**
 * GET with node:http rather than fetch: a feed line is a small chunk, and node streams cost a
 * fraction of what WHATWG body streams do per chunk, which matters with many agents per host.
 */
export function get(url: URL, token: string, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { headers: { authorization: `Bearer ${token}` }, signal }, resolve);
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
