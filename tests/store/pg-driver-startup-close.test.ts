// postgres.js when the server closes a new connection cleanly before its startup completes:
// scripts/patch-postgres.mjs's third defect (porsager/postgres#1193). HAProxy does that on a
// port with no server up (a standby port while the only standby is being promoted), and so
// does a pooler refusing at its door. The server here closes each connection when its startup
// message arrives, so the order is exact: nothing answers, the close is clean (FIN, no error).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import postgres from 'postgres';

const sockets = new Set<Socket>();
let accepted = 0;
const server = createServer((s) => {
  accepted++;
  sockets.add(s);
  s.once('data', () => s.end());
  s.on('close', () => sockets.delete(s));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as { port: number }).port;
after(() => {
  for (const s of sockets) s.destroy();
  server.close();
});

function pool() {
  const sql = postgres(`postgres://u:p@127.0.0.1:${port}/db`, { max: 1, onnotice: () => {} });
  after(() => sql.end({ timeout: 1 }));
  return sql;
}

test('a query on a connection the server closes during startup fails with CONNECTION_CLOSED', { timeout: 30_000 }, async () => {
  const sql = pool();
  // Unpatched, it never settled: the connection reconnected at once, for ever (a busy loop).
  await assert.rejects(sql`SELECT 1`, (e: { code?: string }) => e.code === 'CONNECTION_CLOSED');
  await assert.rejects(
    sql.begin('isolation level repeatable read read only', (tx) => tx`SELECT 1`),
    (e: { code?: string }) => e.code === 'CONNECTION_CLOSED',
  );
});

test('after the failure the pool tries again on the next query, not in a loop of its own', { timeout: 30_000 }, async () => {
  const sql = pool();
  const before = accepted;
  await assert.rejects(sql`SELECT 1`);
  const afterFirst = accepted - before;
  assert.ok(afterFirst >= 1, 'the query connected');
  // Every connection the pool made is accounted for by a query: one more query, at most one
  // more connection attempt (a reconnect loop makes them without any query).
  await assert.rejects(sql`SELECT 1`);
  assert.ok(accepted - before <= afterFirst + 1, `${accepted - before} connections for two queries`);
});
