// The watcher's GET (src/sync/watcher-http.ts): a poll aborted while its body is still coming
// (a handed-over poll closed, the idle timer, a failed handler) ends its body with the abort's
// own reason. An error made by the socket's close instead (ECONNRESET) has its stack read by
// Node's destroy, mapped through source maps when they are on: once per handed-over poll.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { get } from '../../src/sync/watcher-http';
import { LineReader } from '../../src/sync/ndjson';

test('a poll aborted mid-body ends its body with the abort reason, not an error made by the socket', async () => {
  const open: ServerResponse[] = [];
  const server = createServer((_req, res) => {
    open.push(res);
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write('{"type":"heartbeat"}\n');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/cluster/changes`);
    const ac = new AbortController();
    const res = await get(url, 'token', ac.signal);
    const reader = new LineReader(res);
    assert.equal(reader.next() ?? (await reader.more()), '{"type":"heartbeat"}');
    const reason = new Error('the next poll was answered');
    ac.abort(reason);
    await assert.rejects(reader.more(), (e) => e === reason);
    if (!res.closed) await once(res, 'close');
    assert.equal(res.errored, reason);
    reader.close();
  } finally {
    for (const r of open) r.destroy();
    server.close();
  }
});
