// Property-based fuzzing of every endpoint in ctrl's OpenAPI document (issue 26): bodies,
// queries and path parameters of the documented shapes with hostile leaves (NUL, lone
// surrogates, huge and negative numbers, deep nesting, long strings, odd dates, extra fields),
// sent with no credential, a wrong one, an agent token and the admin token. The properties:
// no answer is a 5xx; a refused request (4xx) writes no row; no credential but the right one
// gets past 401/403; no log line ever carries the marker that every hostile string and every
// env value holds. The endpoint list is read from GET /openapi.json at run time, so endpoints
// added to the document are fuzzed without a change here.
//
// npm test runs FUZZ_RUNS=1000 requests (default); a long run: FUZZ_RUNS=10000. Each run draws
// a seed and prints it first (FUZZ_SEED=n replays that run exactly); a failure names it too.
// The run prints its figures as one JSON line, and must have had requests accepted (a fuzzer
// refused everything would test only the refusals).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { captureLogger, REGION, testCtrl } from './helpers';
import { SAFETY_NET_MS, until } from '../helpers/wait';
import { MARKER, endpointsOf, requestOf, type FuzzRequest } from './fuzz-gen';
import { fuzzTenancy } from './fuzz-tenancy';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
if (!Number.isInteger(SEED)) throw new Error(`FUZZ_SEED must be a whole number (got ${process.env.FUZZ_SEED})`);
console.log(`fuzz seed ${SEED}: FUZZ_SEED=${SEED} replays this run`);
/** Accepted requests, at least: a clean body with the admin token is about one draw in 16
 *  (1 in 4 clean, 1 in 4 admin), of which most are accepted (4.7% of 10,000 in the long run). */
const MIN_ACCEPTED_SHARE = 0.01;
/**
 * Endpoints whose accepted call waits for a workflow's answer, which the paused engine (below)
 * never gives. An admin request to one of them is shown to be waiting by its invocation row
 * (written before the wait, with its audit row), then abandoned; any other request that does
 * not answer fails the run at the safety net (tests/helpers/wait.ts).
 */
const WAITS_ON_ENGINE = new Set([
  'POST /v1/sentinel-rollouts',
  'POST /v1/sentinels/{id}/deploy',
  'POST /v1/sentinel-rollouts/current/resume',
  'POST /v1/sentinel-rollouts/current/cancel',
  'POST /v1/sentinel-rollouts/current/rollback',
]);

const log = captureLogger('debug');
// Nothing writes in the background while the fuzzer compares tables: the engine runs no
// invocation (accepted deploys stay queued) and the recovery sweep waits an hour.
const t = await testCtrl(
  { outboundAllow: '127.0.0.1:9' },
  { logger: log.logger, engine: { concurrency: 0 }, recoverEveryMs: 3_600_000, recoverAfterMs: 3_600_000, feed: { waitLimitMs: 300, heartbeatMs: 100 } },
);

type Credential = 'none' | 'wrong' | 'agent' | 'admin';
const tokenFor: Record<Credential, string | null> = {
  none: null,
  wrong: `wrong-${randomBytes(16).toString('hex')}`,
  agent: t.agentToken,
  admin: t.adminToken,
};

/**
 * Every table's row count and the sum of its rows' xmin (an insert, update or delete changes
 * one of them). region_liveness is compared by what only a heartbeat writes: ctrl's liveness
 * timer moves its status and last-seen time in the background.
 */
const tables = (await t.db.sql<{ name: string }[]>`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`).map((r) => r.name);
const snapshotQuery = tables
  .map((name) =>
    name === 'region_liveness'
      ? `SELECT '${name}' AS t, md5(coalesce(string_agg(concat_ws('|', region, agent_id, agent_version, agent_leader, cursor, objects::text, last_full_sync_at), ',' ORDER BY region), '')) AS v FROM region_liveness WHERE agent_id IS NOT NULL`
      : `SELECT '${name}' AS t, count(*)::text || ':' || coalesce(sum(xmin::text::bigint), 0)::text AS v FROM "${name}"`,
  )
  .join(' UNION ALL ');
async function snapshot(): Promise<Record<string, string>> {
  const rows = await t.db.sql.unsafe<{ t: string; v: string }[]>(snapshotQuery);
  return Object.fromEntries(rows.map((r) => [r.t, r.v]));
}

const invocations = async () => (await t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_invocations`)[0]!.n;

/**
 * Sends `req`. An admin call to an endpoint that waits on the engine resolves to 'waiting' once
 * its invocation row exists (the paused engine would never answer it); otherwise the answer,
 * or a failure at the safety net.
 */
async function send(req: FuzzRequest, cred: Credential): Promise<{ status: number; text: string } | 'waiting'> {
  const waits = cred === 'admin' && WAITS_ON_ENGINE.has(req.endpoint);
  const started = waits ? await invocations() : 0;
  const abort = new AbortController();
  const answered = request(req, cred, AbortSignal.any([abort.signal, AbortSignal.timeout(SAFETY_NET_MS)]));
  if (!waits) return answered;
  let done = false;
  const waiting = until(async () => (done ? 'answered' : (await invocations()) > started && 'waiting'), { what: `${req.endpoint} answered or waiting on the engine`, stepMs: 10 });
  type Outcome = { status: number; text: string } | 'waiting';
  const first = await Promise.race<Outcome>([answered.finally(() => (done = true)), waiting.then((w): Outcome | Promise<Outcome> => (w === 'waiting' ? w : answered))]);
  if (first !== 'waiting') return first;
  abort.abort();
  await answered.catch(() => {});
  return 'waiting';
}

async function request(req: FuzzRequest, cred: Credential, signal: AbortSignal): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = {};
  const token = tokenFor[cred];
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (req.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(req.body);
  }
  const res = await fetch(t.url + req.url, { method: req.method, headers, body, signal });
  return { status: res.status, text: (await res.text()).slice(0, 500) };
}

test(`fuzz: ${RUNS} generated requests to every endpoint of the OpenAPI document, with every kind of credential`, { timeout: 30 * 60_000 }, async () => {
  const doc = (await t.api('/openapi.json', { token: null })).body;
  const endpoints = endpointsOf(doc);
  assert.ok(endpoints.some((e) => e.path.startsWith('/v1/cluster/')), 'the document lists the cluster API');
  assert.ok(endpoints.length >= 25, `endpoints in the document: ${endpoints.length}`);
  const figures = { seed: SEED, requests: 0, byStatus: {} as Record<string, number>, byCredential: {} as Record<string, number>, endpoints: endpoints.length, refusedWithoutWrites: 0, accepted: 0, waitedOnEngine: 0 };
  // Three in four requests carry hostile leaves; the rest are clean, with values this ctrl knows
  // where a pattern is not enough, so accepted requests (and what they log) are fuzzed too.
  const hints = { region: fc.constant(REGION), regions: fc.constant([REGION]), image: fc.constantFrom('nginx:1.27', 'registry.local/app@sha256:abc'), environmentId: fc.constant('default') };
  const requests = fc.oneof(
    { arbitrary: fc.oneof(...endpoints.map((e) => requestOf(e, { hostile: true, hints }))), weight: 3 },
    { arbitrary: fc.oneof(...endpoints.map((e) => requestOf(e, { hostile: false, hints }))), weight: 1 },
  );
  let before = await snapshot();
  const started = Date.now();
  // A counterexample can hold megabytes of generated text: its report is cut to a readable size.
  await fc.assert(
    fc.asyncProperty(fc.constantFrom<Credential>('none', 'wrong', 'agent', 'admin'), requests, async (cred, req) => {
      figures.requests++;
      const answer = await send(req, cred);
      if (answer === 'waiting') {
        // Accepted: validated, audited and started; the rest is the engine's, paused here.
        figures.waitedOnEngine++;
        figures.accepted++;
        before = await snapshot();
        return;
      }
      const { status, text } = answer;
      figures.byStatus[status] = (figures.byStatus[status] ?? 0) + 1;
      figures.byCredential[cred] = (figures.byCredential[cred] ?? 0) + 1;
      const after = await snapshot();
      const what = `${req.endpoint} as ${cred}: ${status} ${text.slice(0, 200)}`;
      assert.ok(status < 500, `${what} (a 5xx)`);
      // The router refuses some URLs before any route (or its auth) runs, reading nothing: a
      // path parameter past 256 characters (414), bytes that are not UTF-8 (400 bad url), and
      // Node itself a URL past its 16 KiB header limit (431).
      const beforeRouting = status === 414 || status === 431 || (status === 400 && /not a valid url/.test(text));
      const open = req.endpoint === 'GET /openapi.json' || beforeRouting;
      if ((cred === 'none' || cred === 'wrong') && !open) assert.equal(status, 401, `${what} (expected 401)`);
      const cluster = req.endpoint.includes(' /v1/cluster/');
      if (((cred === 'agent' && !cluster) || (cred === 'admin' && cluster)) && !open) assert.ok([401, 403].includes(status), `${what} (wrong kind of credential)`);
      if (status >= 400) {
        // A refused call leaves its one audit row (issue 26: refusals are audited) and nothing else.
        const { audit_log: auditAfter, ...rest } = after;
        const { audit_log: auditBefore, ...restBefore } = before;
        assert.deepEqual(rest, restBefore, `${what} wrote rows`);
        const rows = (v: string | undefined) => Number((v ?? '0:0').split(':')[0]);
        assert.ok(rows(auditAfter) - rows(auditBefore) <= 1, `${what} wrote more than one audit row`);
        figures.refusedWithoutWrites++;
      } else figures.accepted++;
      before = after;
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  ).catch((err: Error) => {
    const cut = (m: string) => m.replace(/(.{600}).*?(?=\n|$)/g, '$1…').slice(0, 4000);
    throw new Error(`FUZZ_SEED=${SEED} replays this failure\n${cut(err.message)}\ncause: ${cut(String((err.cause as Error | undefined)?.message ?? ''))}`);
  });
  const leaked = log.lines.filter((l) => l.includes(MARKER));
  console.log(JSON.stringify({ fuzz: { ...figures, seconds: Math.round((Date.now() - started) / 100) / 10, fiveHundreds: 0, logLines: log.lines.length, logLinesWithMarker: leaked.length } }));
  assert.deepEqual(leaked.map((l) => l.slice(0, 300)), [], 'log lines carry a generated value');
  assert.equal(figures.requests, RUNS, 'every generated request was sent and judged');
  assert.ok(figures.accepted >= RUNS * MIN_ACCEPTED_SHARE, `accepted ${figures.accepted} of ${RUNS} (FUZZ_SEED=${SEED}): the generator no longer reaches past validation`);
  for (const cred of ['none', 'wrong', 'agent', 'admin']) assert.ok((figures.byCredential[cred] ?? 0) + (cred === 'admin' ? figures.waitedOnEngine : 0) >= RUNS / 10, `${cred} drawn ${figures.byCredential[cred] ?? 0} times`);
});

test('a call that waits on the paused engine is seen waiting by its invocation row, not by a timeout', async () => {
  const before = await invocations();
  const req: FuzzRequest = { endpoint: 'POST /v1/sentinel-rollouts', method: 'POST', url: '/v1/sentinel-rollouts', body: { image: 'sentinel:fuzz-1' } };
  assert.equal(await send(req, 'admin'), 'waiting');
  assert.equal(await invocations(), before + 1, 'its workflow was started');
  const refused = await send({ ...req, body: { image: 12 } }, 'admin');
  assert.ok(refused !== 'waiting' && refused.status === 400, JSON.stringify(refused));
});

// The tenancy and key endpoints with keys of every permission set (issue 32): tests/http/fuzz-tenancy.ts.
const TENANCY_RUNS = Number(process.env.FUZZ_TENANCY_RUNS ?? 400);
test(`fuzz: ${TENANCY_RUNS} generated requests to the tenancy, key and audit endpoints, each with a key of some permission set`, { timeout: 30 * 60_000 }, async () => {
  console.log(JSON.stringify({ fuzzTenancy: { seed: SEED, ...(await fuzzTenancy(TENANCY_RUNS, SEED)) } }));
});
