// Sends one JSON POST, or reads one GET, under the outbound policy (outbound.ts). node:http(s)
// rather than fetch:
// the socket's `lookup` is ours, so the address checked is the address connected to (a name
// cannot resolve publicly for the check and privately for the connection), there is no
// connection pool that could reuse a socket opened under another decision, and redirects are
// never followed (a 3xx is a failed post). A post's failures carry a fixed, short message: the
// status code, or what kind of failure, never the remote's words, so a webhook URL cannot be
// used to read anything back from the network. A GET (the Prometheus gate) returns its body,
// read up to a cap, for the caller to make sense of.
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { addressesProblem, allowListed, urlProblem, type LookupAll, type OutboundPolicy } from './policy';

/** A post the policy refuses: retrying cannot help. */
export class OutboundRefusedError extends Error {
  constructor(reason: string) {
    super(`destination not allowed: ${reason}`);
    this.name = 'OutboundRefusedError';
  }
}

/** A post that failed in flight (status, timeout, connection). */
export class OutboundFailedError extends Error {
  /** False when the same post cannot succeed later: a redirect (never followed), a 4xx. */
  readonly retryable: boolean;
  constructor(message: string, retryable = true) {
    super(message);
    this.name = 'OutboundFailedError';
    this.retryable = retryable;
  }
}

/** 408 and 429 ask for another try; other 3xx and 4xx answers will not change on one. */
const retryableStatus = (status: number) => status >= 500 || status === 408 || status === 429;

/** The socket's lookup: resolves all addresses and refuses the host if any is not public. */
function guardedLookup(policy: OutboundPolicy, anyAddress: boolean): LookupFunction {
  const resolve = policy.lookup ?? (dnsLookup as unknown as LookupAll);
  return (hostname, options, callback) => {
    resolve(hostname, { all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const problem = anyAddress ? null : addressesProblem(addresses);
      if (problem) return callback(new OutboundRefusedError(problem), '', 0);
      const family = options.family === 4 || options.family === 6 ? options.family : 0;
      const usable = family ? addresses.filter((a) => a.family === family) : addresses;
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
      const first = usable[0];
      if (!first) return callback(new OutboundFailedError('no address of the wanted family'), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

/** A request's error as the fixed words callers record: refused, timed out, or unreachable. */
function requestFailure(err: Error, timeoutMs: number, what: string): Error {
  if (err instanceof OutboundRefusedError) return err;
  if (err.name === 'AbortError' || err.name === 'TimeoutError') return new OutboundFailedError(what ? `${what}did not answer within ${timeoutMs} ms` : `no answer within ${timeoutMs} ms`);
  return new OutboundFailedError(`${what}could not be reached`);
}

/** One request to `u` on a socket of its own, resolved and checked for it alone. */
function guardedRequest(u: URL, policy: OutboundPolicy, method: string, timeoutMs: number, headers: RequestOptions['headers'], onResponse: (res: IncomingMessage) => void): ClientRequest {
  const options: RequestOptions = { method, headers, agent: false, lookup: guardedLookup(policy, allowListed(policy, u)), signal: AbortSignal.timeout(timeoutMs) };
  return (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, options, onResponse);
}

function checkedUrl(url: string, policy: OutboundPolicy): URL {
  const problem = urlProblem(url, policy);
  if (problem) throw new OutboundRefusedError(problem);
  return new URL(url);
}

export async function postJson(url: string, body: unknown, policy: OutboundPolicy, opts: { timeoutMs: number }): Promise<void> {
  const u = checkedUrl(url, policy);
  const payload = Buffer.from(JSON.stringify(body));
  const headers = { 'content-type': 'application/json', 'content-length': payload.length };
  await new Promise<void>((resolve, reject) => {
    const req = guardedRequest(u, policy, 'POST', opts.timeoutMs, headers, (res) => {
      const status = res.statusCode ?? 0;
      // Only the status matters; the body (whatever the remote says) is never read.
      res.destroy();
      if (status >= 200 && status < 300) resolve();
      else reject(new OutboundFailedError(`webhook answered ${status}`, retryableStatus(status)));
    });
    req.on('error', (err: Error) => reject(requestFailure(err, opts.timeoutMs, 'webhook ')));
    req.end(payload);
  });
}

/** A GET's answer: its status and body, or `text` null when the body passed `maxBytes`. */
export interface CappedAnswer {
  status: number;
  text: string | null;
}

/** One GET under the policy; the body is read up to `maxBytes` (the rest is never read). */
export async function getCapped(url: string, policy: OutboundPolicy, opts: { timeoutMs: number; maxBytes: number }): Promise<CappedAnswer> {
  const u = checkedUrl(url, policy);
  return new Promise<CappedAnswer>((resolve, reject) => {
    const req = guardedRequest(u, policy, 'GET', opts.timeoutMs, { accept: 'application/json' }, (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let n = 0;
      res.on('data', (chunk: Buffer) => {
        n += chunk.byteLength;
        if (n <= opts.maxBytes) return void chunks.push(chunk);
        res.destroy();
        resolve({ status, text: null });
      });
      res.on('end', () => resolve({ status, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => reject(new OutboundFailedError('the answer was cut off')));
    });
    req.on('error', (err: Error) => reject(requestFailure(err, opts.timeoutMs, '')));
    req.end();
  });
}
