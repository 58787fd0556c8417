// The client commands ride out a moment without ctrl or its database (issue 35): which failures
// are retried (pure table) and the client doing it against a server that answers 503 first.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient, ApiError, CliError } from '../../src/cli';
import { isTransient, retryDelay } from '../../src/cli/retry';
import { assertEvery } from '../helpers/assert';

test('transient: 502/503/504 and a connection broken under a call; not a refused connection, a 4xx, a 500 or another client error', () => {
  const unreachable = (code: string) => new CliError('ERR_CLI_UNREACHABLE', 'x', { cause: Object.assign(new Error(code), { code }) });
  const rows: [unknown, boolean][] = [
    [new ApiError(503, 'ERR_DATABASE_UNAVAILABLE', 'db away', []), true],
    [new ApiError(502, 'ERR_UNKNOWN', 'bad gateway', []), true],
    [new ApiError(504, 'ERR_UNKNOWN', 'timeout', []), true],
    [new ApiError(500, 'ERR_INTERNAL', 'bug', []), false],
    [new ApiError(409, 'ERR_ROLLOUT_IN_PROGRESS', 'busy', []), false],
    [new ApiError(400, 'ERR_VALIDATION_INVALID', 'bad', []), false],
    [unreachable('ECONNREFUSED'), false],
    [unreachable('ECONNRESET'), true],
    [unreachable('ENOTFOUND'), false],
    [new CliError('ERR_CLI_NO_API', 'none'), false],
    [new Error('plain'), false],
  ];
  for (const [err, want] of rows) assert.equal(isTransient(err), want, String((err as Error).message));
});

test('retry delays double from 250 ms to a 4 s cap, jittered within the upper half', () => {
  assert.equal(retryDelay(1, () => 0), 125);
  assert.equal(retryDelay(1, () => 1), 250);
  assert.equal(retryDelay(3, () => 1), 1_000);
  assert.equal(retryDelay(10, () => 1), 4_000);
  assert.equal(retryDelay(10, () => 0), 2_000);
});

/** A server that answers 503 to the first `failFirst` calls, then 202; it records each call. */
async function flakyServer(failFirst: number) {
  const calls: { method: string; key: string | undefined }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    calls.push({ method: req.method!, key: req.headers['idempotency-key'] as string | undefined });
    req.resume();
    const fail = calls.length <= failFirst;
    res.writeHead(fail ? 503 : 202, { 'content-type': 'application/json' });
    res.end(JSON.stringify(fail ? { error: { code: 'ERR_DATABASE_UNAVAILABLE', message: 'database unavailable' } } : { id: 'dep-1' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => new Promise<void>((r) => server.close(() => r())));
  const client = new ApiClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 't', source: 'flag', devFilePath: '' });
  after(() => client.close());
  return { calls, client };
}

test('a create with a key is sent again, with the same key, until ctrl answers', async () => {
  const { calls, client } = await flakyServer(2);
  const r = await client.post('/v1/deployments', { body: { image: 'x' }, retry: true, idempotencyKey: 'key-abcdefgh' });
  assert.equal(r.id, 'dep-1');
  assert.equal(calls.length, 3);
  assertEvery(calls, (c) => c.key === 'key-abcdefgh', 'every try carried the key');
});

test('a write not marked safe to repeat is sent once; a read is retried', async () => {
  const once = await flakyServer(1);
  await assert.rejects(once.client.post('/v1/sentinel-rollouts', { body: { image: 'x' } }), (err: unknown) => err instanceof ApiError && err.status === 503);
  assert.equal(once.calls.length, 1);
  const read = await flakyServer(1);
  assert.deepEqual(await read.client.get('/v1/deployments/{id}', { path: { id: 'dep-1' } }), { id: 'dep-1' });
  assert.equal(read.calls.length, 2);
});
