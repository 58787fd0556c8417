// The outbound policy (src/workflow/outbound/policy.ts) and its sender: address classes, URL rules,
// and the check on the address actually connected to (DNS rebinding), with a resolver of the
// test's own standing in for DNS.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { destinationProblem, nonPublicKind, urlProblem, type LookupAll, type OutboundPolicy } from '../../../src/workflow/outbound/policy';
import { OutboundFailedError, OutboundRefusedError, postJson } from '../../../src/workflow/outbound/post';
import { queryPrometheus } from '../../../src/workflow/progressive/analysis';

test('address classes: public addresses pass, every local, private and reserved range is named', () => {
  const table: [string, string | null][] = [
    ['8.8.8.8', null],
    ['1.1.1.1', null],
    ['2606:4700:4700::1111', null],
    ['::ffff:8.8.8.8', null],
    ['64:ff9b::808:808', null], // NAT64 of a public address
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'], // NAT64 of 127.0.0.1
    ['2002:7f00:1::', 'loopback'], // 6to4 of 127.0.0.1
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['100.100.100.200', 'shared (CGNAT)'],
    ['fd00:ec2::254', 'unique-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['not-an-ip', 'reserved'],
    // Every IPv6 form that carries an IPv4 address is classified by that address (issue 26).
    ['::ffff:0:7f00:1', 'loopback'], // IPv4-translated (RFC 6145) 127.0.0.1
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::ffff:0:a9fe:a9fe', 'link-local'], // translated metadata service
    ['::ffff:0:808:808', null], // translated public
    ['::ffff:a9fe:a9fe', 'link-local'], // mapped, hex form
    ['::ffff:10.1.2.3', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b:1::1', 'reserved'], // local-use NAT64 prefix: no fixed place for the address
    ['2002:a9fe:a9fe::1', 'link-local'], // 6to4
    ['2002:0a00:0001::', 'private'],
    ['2002:0808:0808::1', null],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // Teredo, client 127.0.0.1 (inverted)
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', null], // Teredo, client 8.8.8.8, server 65.54.227.120
    ['2001:0:7f00:1:8000:63bf:f7f7:f7f7', 'loopback'], // Teredo, server 127.0.0.1
    ['::127.0.0.1', 'loopback'], // IPv4-compatible
    ['::a9fe:a9fe', 'link-local'],
    ['::8.8.8.8', null],
    ['2001:db8::1', 'reserved'],
    ['fec0::1', 'private'],
    ['100::1', 'reserved'],
    ['192.88.99.1', 'reserved'],
  ];
  for (const [ip, kind] of table) assert.equal(nonPublicKind(ip), kind, ip);
});

test('URL rules: https to public hosts; http and private addresses only when allow-listed (host, or host and port)', () => {
  const policy: OutboundPolicy = { allow: [{ host: '127.0.0.1', port: 8080 }, { host: 'hooks.internal', port: null }, { host: '::1', port: null }] };
  const ok = ['https://hooks.slack.com/services/T/B/X', 'https://8.8.8.8/x', 'http://127.0.0.1:8080/x', 'http://hooks.internal/x', 'https://HOOKS.internal:9443/x', 'http://[::1]:1/x'];
  for (const u of ok) assert.equal(urlProblem(u, policy), null, u);
  const bad: [string, RegExp][] = [
    ['http://hooks.slack.com/x', /must be https/],
    ['http://127.0.0.1:8081/x', /must be https/],
    ['https://127.0.0.1:8081/x', /loopback address/],
    ['https://localhost/x', /loopback name/],
    ['https://a.localhost/x', /loopback name/],
    ['https://[::ffff:a9fe:a9fe]/x', /link-local/],
    ['file:///etc/passwd', /https URL/],
    ['not a url', /must be a URL/],
  ];
  for (const [u, why] of bad) assert.match(urlProblem(u, policy) ?? '', why, u);
});

/** A resolver that answers each name from a script, one answer per call. */
function scripted(answers: Record<string, string[]>): LookupAll {
  const calls: Record<string, number> = {};
  return (hostname, _opts, cb) => {
    const list = answers[hostname];
    if (!list) return cb(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    const i = Math.min(calls[hostname] ?? 0, list.length - 1);
    calls[hostname] = i + 1;
    const address = list[i]!;
    cb(null, [{ address, family: address.includes(':') ? 6 : 4 }]);
  };
}

async function listen(server: { listen(port: number, host: string, cb: () => void): unknown; address(): unknown; close(cb?: () => void): unknown }): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => new Promise<void>((r) => server.close(() => r())));
  return (server.address() as AddressInfo).port;
}

test('the connection goes only where the check allowed: a name that rebinds to loopback is refused before any byte is sent', async () => {
  let connections = 0;
  const tcp = createTcpServer((s) => {
    connections++;
    s.destroy();
  });
  const port = await listen(tcp);
  // Public when the API checks, loopback when the post connects.
  const policy: OutboundPolicy = { allow: [], lookup: scripted({ 'rebind.example': ['93.184.216.34', '127.0.0.1'] }) };
  const url = `https://rebind.example:${port}/hook`;
  assert.equal(await destinationProblem(url, policy), null, 'the first answer is public');
  await assert.rejects(postJson(url, { text: 'x' }, policy, { timeoutMs: 5000 }), (err: unknown) => err instanceof OutboundRefusedError && /loopback/.test((err as Error).message));
  // Positive evidence that nothing connected: a later, allowed connection is the first one seen.
  await new Promise<void>((resolve, reject) => {
    const probe = connect(port, '127.0.0.1');
    probe.on('error', reject);
    probe.on('close', () => resolve());
  });
  assert.equal(connections, 1, 'only the probe reached the server');
});

test('the API check refuses a name that resolves to a private address, and lets an unresolvable one through to the send-time check', async () => {
  const policy: OutboundPolicy = { allow: [], lookup: scripted({ 'internal.example': ['10.0.0.5'], 'dual.example': ['8.8.8.8'] }) };
  assert.match((await destinationProblem('https://internal.example/x', policy)) ?? '', /resolves to a private address/);
  assert.equal(await destinationProblem('https://dual.example/x', policy), null);
  assert.equal(await destinationProblem('https://nxdomain.example/x', policy), null);
});

test('an allow-listed name is posted to over http at the address its lookup gives; answers are status codes only', async () => {
  const seen: string[] = [];
  const http = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} ${body}`);
      res.writeHead(req.url === '/fail' ? 503 : req.url === '/gone' ? 404 : 200);
      res.end('remote text that must not travel');
    });
  });
  const port = await listen(http);
  const policy: OutboundPolicy = { allow: [{ host: 'hooks.internal', port: null }], lookup: scripted({ 'hooks.internal': ['127.0.0.1'] }) };
  await postJson(`http://hooks.internal:${port}/ok`, { text: 'hello' }, policy, { timeoutMs: 5000 });
  assert.deepEqual(seen, ['POST /ok {"text":"hello"}']);
  await assert.rejects(postJson(`http://hooks.internal:${port}/fail`, {}, policy, { timeoutMs: 5000 }), (e: any) => e instanceof OutboundFailedError && e.message === 'webhook answered 503' && e.retryable);
  await assert.rejects(postJson(`http://hooks.internal:${port}/gone`, {}, policy, { timeoutMs: 5000 }), (e: any) => e.message === 'webhook answered 404' && !e.retryable);
});

test('a webhook that never answers fails with a timeout; an unreachable one with a fixed message', async () => {
  // Reads and never answers; reading lets it see the client go away, so close() can finish.
  const silent = createTcpServer((s) => s.resume());
  const port = await listen(silent);
  const policy: OutboundPolicy = { allow: [{ host: '127.0.0.1', port: null }] };
  await assert.rejects(postJson(`http://127.0.0.1:${port}/x`, {}, policy, { timeoutMs: 200 }), (e: any) => e.message === 'webhook did not answer within 200 ms');
  const closed = createTcpServer();
  const closedPort = await listen(closed);
  await new Promise<void>((r) => closed.close(() => r()));
  await assert.rejects(postJson(`http://127.0.0.1:${closedPort}/x`, {}, policy, { timeoutMs: 5000 }), (e: any) => e.message === 'webhook could not be reached');
});

/** A Prometheus stand-in answering one instant query with `value`. */
async function fakePrometheus(value: string): Promise<{ port: number; queries: string[] }> {
  const queries: string[] = [];
  const server = createHttpServer((req, res) => {
    queries.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [0, value] }] } }));
  });
  return { port: await listen(server), queries };
}

test('a Prometheus gate connects to the address the policy checked: its name resolves through the policy, not a second lookup', async () => {
  const prom = await fakePrometheus('0.25');
  const policy: OutboundPolicy = { allow: [{ host: 'prom.internal', port: null }], lookup: scripted({ 'prom.internal': ['127.0.0.1'] }) };
  const r = await queryPrometheus({ url: `http://prom.internal:${prom.port}`, query: 'up', max: 1 }, policy);
  assert.deepEqual(r, { verdict: 'pass', value: 0.25, reason: null });
  assert.deepEqual(prom.queries, ['/api/v1/query?query=up']);
});

test('a Prometheus name that rebinds to loopback after the check is refused before any byte is sent', async () => {
  const prom = await fakePrometheus('0');
  const policy: OutboundPolicy = { allow: [], lookup: scripted({ 'rebind.example': ['93.184.216.34', '127.0.0.1'] }) };
  const url = `https://rebind.example:${prom.port}`;
  assert.equal(await destinationProblem(url, policy), null, 'the first answer is public');
  const r = await queryPrometheus({ url, query: 'up', max: 1 }, policy);
  assert.equal(r.verdict, 'inconclusive');
  assert.match(r.reason ?? '', /not allowed: resolves to a loopback/);
  assert.deepEqual(prom.queries, []);
});

test('a Prometheus answer over the cap, or not JSON, is inconclusive and says why', async () => {
  const big = createHttpServer((req, res) => {
    res.writeHead(200);
    res.end(req.url?.includes('junk') ? 'not json' : 'x'.repeat(2 * 1024 * 1024));
  });
  const port = await listen(big);
  const policy: OutboundPolicy = { allow: [{ host: '127.0.0.1', port: null }] };
  assert.match((await queryPrometheus({ url: `http://127.0.0.1:${port}`, query: 'up' }, policy)).reason ?? '', /over 1048576 bytes/);
  assert.match((await queryPrometheus({ url: `http://127.0.0.1:${port}`, query: 'junk' }, policy)).reason ?? '', /not a Prometheus answer/);
});
