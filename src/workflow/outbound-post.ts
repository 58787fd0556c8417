// Sends one JSON POST under the outbound policy (outbound.ts). node:http(s) rather than fetch:
// the socket's `lookup` is ours, so the address checked is the address connected to (a name
// cannot resolve publicly for the check and privately for the connection), there is no
// connection pool that could reuse a socket opened under another decision, and redirects are
// never followed (a 3xx is a failed post). Failures carry a fixed, short message: the status
// code, or what kind of failure, never the remote's words, so a webhook URL cannot be used to
// read anything back from the network.
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { addressesProblem, allowListed, urlProblem, type LookupAll, type OutboundPolicy } from './outbound';

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

export async function postJson(url: string, body: unknown, policy: OutboundPolicy, opts: { timeoutMs: number }): Promise<void> {
  const problem = urlProblem(url, policy);
  if (problem) throw new OutboundRefusedError(problem);
  const u = new URL(url);
  const payload = Buffer.from(JSON.stringify(body));
  const options: RequestOptions = {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': payload.length },
    // One socket per post, resolved and checked for this post alone.
    agent: false,
    lookup: guardedLookup(policy, allowListed(policy, u)),
    signal: AbortSignal.timeout(opts.timeoutMs),
  };
  const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
  await new Promise<void>((resolve, reject) => {
    const req = send(u, options, (res) => {
      const status = res.statusCode ?? 0;
      // Only the status matters; the body (whatever the remote says) is never read.
      res.destroy();
      if (status >= 200 && status < 300) resolve();
      else reject(new OutboundFailedError(`webhook answered ${status}`, retryableStatus(status)));
    });
    req.on('error', (err: Error) => {
      if (err instanceof OutboundRefusedError) reject(err);
      else if (err.name === 'AbortError' || err.name === 'TimeoutError') reject(new OutboundFailedError(`webhook did not answer within ${opts.timeoutMs} ms`));
      else reject(new OutboundFailedError('webhook could not be reached'));
    });
    req.end(payload);
  });
}
