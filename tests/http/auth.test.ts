// Agent and admin auth on ctrl's cluster API: checked before the body is read, unknown tokens
// cached as unknown, wrong-scope tokens answered 403, revocation that sticks and cuts streams.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { pino } from 'pino';
import { testDb } from '../helpers/db';
import { buildCtrlApp, errorHandler } from '../../src/http';
import * as auth from '../../src/http/auth';
import { clusterStatusRoutes } from '../../src/http/cluster-status';
import { createAgentToken, ensureAgentToken, hashToken, revokeAgentToken } from '../../src/store/agent-tokens';
import { TOKENS, countingDb, readFeed, silent, startFeedServer, waitFor } from '../sync/helpers';

const db = await testDb();
const ADMIN = 'admin-token-0123456789abcdef';

async function statusApp(sql = db.sql) {
  const { app } = await buildCtrlApp({ sql, logger: silent, routes: [clusterStatusRoutes({ sql, agentTokens: TOKENS })] });
  await app.listen({ host: '127.0.0.1', port: 0 });
  after(() => app.close());
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

test('the token is checked before the body is read: a bad body without a token is 401, a half-sent body is not waited for', async () => {
  const url = await statusApp();
  const r = await fetch(`${url}/v1/cluster/deployments/status`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad' });
  assert.equal(r.status, 401);
  assert.equal(((await r.json()) as any).error.code, 'ERR_AUTH_UNAUTHORIZED');

  // Headers announce a 1 MB body; only a few bytes follow. Auth must answer without them.
  const { port } = new URL(url);
  const answer = await new Promise<string>((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no answer before the body arrived; got ${JSON.stringify(got)}`));
    }, 10_000);
    s.on('data', (d) => {
      got += d;
      if (got.includes('\r\n\r\n')) {
        clearTimeout(timer);
        s.destroy();
        resolve(got);
      }
    });
    s.on('error', reject);
    s.write('POST /v1/cluster/deployments/status HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n{"a":');
  });
  assert.match(answer, /^HTTP\/1\.1 401/);
});

test('unknown agent tokens are cached as unknown: repeated bad requests cost no further queries', async () => {
  const counted = countingDb(db.url);
  after(() => counted.sql.end({ timeout: 1 }));
  const url = await statusApp(counted.sql);
  const bad = { authorization: 'Bearer no-such-token-0123456789', 'content-type': 'application/json' };
  // The first lookup (and registering the configured tokens) may query; the rest must not.
  const first = await fetch(`${url}/v1/cluster/deployments/status`, { method: 'POST', headers: bad, body: '{}' });
  assert.equal(first.status, 401);
  const before = counted.count();
  for (let i = 0; i < 20; i++) {
    const r = await fetch(`${url}/v1/cluster/deployments/status`, { method: 'POST', headers: bad, body: '{}' });
    assert.equal(r.status, 401);
  }
  assert.equal(counted.count() - before, 0, 'no query for a token already known to be bad');
});

test('tokens shorter than 16 characters are refused without a lookup, configured or presented', async () => {
  assert.throws(() => new auth.AgentAuth({ sql: db.sql, configured: { 'us-east-1': 'short' } }), /16 characters/);
  await assert.rejects(ensureAgentToken(db.sql, 'us-east-1', 'x'.repeat(15)), /16 characters/);
  const agents = new auth.AgentAuth({ sql: db.sql });
  assert.equal(await agents.authenticate('x'.repeat(15)), undefined);
});

test('wrong scope is 403: the admin token on the cluster API, an agent token on the admin API', async () => {
  const agents = new auth.AgentAuth({ sql: db.sql, configured: TOKENS, adminToken: ADMIN });
  const app = Fastify();
  app.setErrorHandler(errorHandler);
  await app.register(async (s) => {
    s.addHook('onRequest', agents.onRequest);
    s.get('/v1/cluster/x', async (req) => ({ region: req.agentRegion }));
  });
  await app.register(async (s) => {
    s.addHook('onRequest', auth.adminAuth(ADMIN, { agents }));
    s.get('/v1/admin-thing', async () => ({ ok: true }));
  });
  after(() => app.close());
  const call = async (path: string, token?: string) => (await app.inject({ url: path, headers: token ? { authorization: `Bearer ${token}` } : {} })).statusCode;
  assert.equal(await call('/v1/cluster/x', TOKENS['us-east-1']), 200);
  assert.equal(await call('/v1/cluster/x', ADMIN), 403);
  assert.equal(await call('/v1/cluster/x', 'unknown-token-0123456789'), 401);
  assert.equal(await call('/v1/cluster/x'), 401);
  assert.equal(await call('/v1/admin-thing', ADMIN), 200);
  assert.equal(await call('/v1/admin-thing', TOKENS['eu-west-1']), 403);
  assert.equal(await call('/v1/admin-thing', 'unknown-token-0123456789'), 401);
  assert.equal(await call('/v1/admin-thing'), 401);
});

/** A long poll read as it arrives: its lines so far, and whether (and how) it ended. */
async function liveStream(url: string, token: string) {
  const res = await fetch(`${url}/v1/cluster/changes?wait=60`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  const s = { lines: [] as string[], ended: false, endedAt: 0 };
  void (async () => {
    let rest = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        rest += Buffer.from(chunk).toString('utf8');
        const parts = rest.split('\n');
        rest = parts.pop()!;
        s.lines.push(...parts.filter(Boolean));
      }
    } catch {
      // A cut connection: what the agent sees as "no end line".
    }
    s.ended = true;
    s.endedAt = Date.now();
  })();
  return s;
}
const heartbeats = (s: { lines: string[] }) => s.lines.filter((l) => l.includes('"heartbeat"')).length;

test('revoking a token cuts its open streams on every ctrl replica, a bystander token keeps streaming, and the revoked token then gets 401', async () => {
  const a = await startFeedServer(db.url, { waitLimitMs: 60_000, heartbeatMs: 200 });
  const b = await startFeedServer(db.url, { waitLimitMs: 60_000, heartbeatMs: 200 });
  after(() => Promise.all([a.close(), b.close()]));
  const { id, token } = await createAgentToken(db.sql, 'ap-south-1');
  const other = await createAgentToken(db.sql, 'ap-south-1');
  const streams = [await liveStream(a.url, token), await liveStream(b.url, token)];
  const bystanders = [await liveStream(a.url, other.token), await liveStream(b.url, other.token)];
  // Every stream is live before the revocation: it has sent its snapshot and a heartbeat.
  await waitFor(() => [...streams, ...bystanders].every((s) => heartbeats(s) >= 1), 10_000, 'all streams live');

  assert.equal(await revokeAgentToken(db.sql, id), true);
  // Cut, not ended at their 60 s wait limit (which sends `end`): the revocation did it. How
  // fast is not a test's question.
  await waitFor(() => streams.every((s) => s.ended), { what: "both replicas cut the revoked token's streams" });
  for (const s of streams) assert.ok(!s.lines.some((l) => l.includes('"type":"end"')), 'cut, not ended: nothing more is sent to a revoked token');
  // The bystanders are not just "not ended yet": they keep receiving lines after the cut.
  const seen = bystanders.map(heartbeats);
  await waitFor(() => bystanders.every((s, i) => heartbeats(s) >= seen[i]! + 3), 10_000, 'the bystander streams keep their heartbeats');
  assertEvery(bystanders, (s) => !s.ended, 'another token of the region keeps its streams on both replicas');
  for (const url of [a.url, b.url]) {
    const refused = await readFeed(url, token, { wait: '0.1' });
    assert.equal(refused.status, 401, `revoked token on ${url}`);
    assert.equal(JSON.parse(refused.body).error.code, 'ERR_AUTH_UNAUTHORIZED');
    assert.equal((await readFeed(url, other.token, { wait: '0.1' })).status, 200, 'the bystander token still polls');
  }
});

test('a revoked token passed again in --agent-tokens stays revoked, and ctrl says so in its log', async () => {
  const configured = { 'sa-east-1': 'configured-token-sa-east-1-0123' };
  await ensureAgentToken(db.sql, 'sa-east-1', configured['sa-east-1']);
  const [row] = await db.sql<{ id: string }[]>`SELECT id FROM agent_tokens WHERE token_hash = ${hashToken(configured['sa-east-1'])}`;
  assert.equal(await revokeAgentToken(db.sql, row!.id), true);

  const lines: any[] = [];
  const logger = pino({ level: 'info' }, new Writable({ write(chunk, _enc, cb) { lines.push(JSON.parse(String(chunk))); cb(); } }));
  // A restart of ctrl with the same flag.
  const s = await startFeedServer(db.url, { waitLimitMs: 500, agentTokens: configured, logger } as never);
  after(() => s.close());
  const r = await readFeed(s.url, configured['sa-east-1'], { wait: '0.1' });
  assert.equal(r.status, 401);
  await waitFor(() => lines.some((l) => /revoked/.test(l.msg) && l.tokenId === row!.id && l.region === 'sa-east-1'), 5_000, 'a log line naming the revoked token');
  assert.ok(!JSON.stringify(lines).includes(configured['sa-east-1']), 'the token itself is never logged');
});

test('a configured token already stored for another region is refused, as the log says, not served for the stored one', async () => {
  const token = 'configured-token-moved-region-0123';
  await ensureAgentToken(db.sql, 'me-south-1', token);
  // The same token configured again under another region (an operator's copy-paste).
  const s = await startFeedServer(db.url, { waitLimitMs: 500, agentTokens: { 'me-central-1': token } } as never);
  after(() => s.close());
  assert.equal((await readFeed(s.url, token, { wait: '0.1' })).status, 401);
  assert.equal((await readFeed(s.url, token, { wait: '0.1', region: 'me-south-1' })).status, 401);
});

test('a revocation whose NOTIFY was lost while the listener was down still cuts the token\'s streams once it reconnects', async () => {
  const s = await startFeedServer(db.url, { waitLimitMs: 60_000, heartbeatMs: 500 });
  after(() => s.close());
  const { id, token } = await createAgentToken(db.sql, 'af-south-1');
  const res = await fetch(`${s.url}/v1/cluster/changes?wait=60`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  let ended = false;
  void res.text().catch(() => '').finally(() => (ended = true));
  // Revoked without the NOTIFY (as if it was sent while nobody listened), then the listener's
  // connection is lost: it reconnects, and must look for what it missed. (postgres.js keeps
  // one LISTEN connection per client; its last statement names whichever channel came last.)
  await db.sql`UPDATE agent_tokens SET revoked_at = now() WHERE id = ${id}`;
  const killed = await db.sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'listen %' AND pid <> pg_backend_pid() AND datname = current_database()`;
  assert.ok(killed.length >= 1, 'found the revocation listener');
  await waitFor(() => ended, 15_000, 'the revoked token\'s stream cut after the listener reconnected');
});
