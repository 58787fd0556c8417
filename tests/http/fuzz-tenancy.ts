// The fuzz test's tenancy and key part (issue 32; run from tests/http/fuzz.test.ts): generated
// requests to the tenancy, key and audit endpoints of the OpenAPI document, each sent with a key
// of one of two workspaces holding one of every permission set (each permission alone, all of
// them, random subsets; at workspace, project and environment scope; a revoked one). Path ids
// and scope fields come mostly from both workspaces' real ids, so requests get past the 404s.
// The properties, beside the main fuzz test's (no 5xx; a refusal writes nothing but its audit
// row; no generated value in a log line):
// - the other workspace's rows (tenancy, keys, hostname claims, audit rows) never change;
// - a change is accepted only from a key holding the route's permission;
// - what a key reads of its own lists and views names nothing of the other workspace.
// Its own ctrl (rate limits off, key cap high), so the main test's setup stays untouched.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { captureLogger, testCtrl, type TestCtrl } from './helpers';
import { MARKER, endpointsOf, requestOf, type FuzzRequest } from './fuzz-gen';
import { deployments, tenancy } from '../../src/store';

const PERMISSIONS = ['deployments.read', 'deployments.write', 'environments.write', 'traffic.write', 'sentinels.write', 'rollouts.write', 'regions.read', 'invocations.read', 'invocations.write', 'audit.read', 'keys.write'];
const LEVELS = ['workspace', 'project', 'environment'] as const;
const TENANCY_PATH = /^\/v1\/(workspaces|projects|keys|audit)|^\/v1\/environments\/\{id\}$/;
/** What a key needs for each change (src/http/api/tenancy.ts, keys.ts, features.ts); `null`: no key may. */
const NEEDS: Record<string, string | null> = {
  'POST /v1/workspaces': null,
  'DELETE /v1/workspaces/{id}': null,
  'PUT /v1/workspaces/{id}/features': null,
  'POST /v1/workspaces/{id}/projects': 'environments.write',
  'DELETE /v1/projects/{id}': 'environments.write',
  'POST /v1/projects/{id}/environments': 'environments.write',
  'DELETE /v1/environments/{id}': 'environments.write',
  'POST /v1/keys': 'keys.write',
  'DELETE /v1/keys/{id}': 'keys.write',
};
/** Reads whose answer is the caller's own things only (the audit trail may echo ids the caller sent). */
const OWN_VIEWS = /^GET \/v1\/(workspaces(\/\{id\}(\/projects)?)?|projects\/\{id\}(\/environments)?|environments\/\{id\}|keys(\/self)?)$/;

interface Tenant {
  workspaceId: string;
  projectId: string;
  environmentId: string;
  /** Every id of the workspace (what the other workspace's answers must never name). */
  ids: string[];
  /** Ids requests may name in their path: the keys themselves are left out, so an accepted
   *  revocation does not end the run's credentials. */
  targets: string[];
}
interface Cred {
  tenant: 'A' | 'B';
  token: string;
  perms: Set<string>;
  label: string;
}

async function tenant(t: TestCtrl, name: string): Promise<Tenant> {
  const ws = (await t.api('/v1/workspaces', { body: { name } })).body.id as string;
  const prj = (await t.api(`/v1/workspaces/${ws}/projects`, { body: { name: 'api' } })).body.id as string;
  const env = (await t.api(`/v1/projects/${prj}/environments`, { body: { slug: 'production', hostname: `www.${name}.example` } })).body.id as string;
  const env2 = (await t.api(`/v1/projects/${prj}/environments`, { body: { slug: 'staging' } })).body.id as string;
  // A deployment on its way keeps the environment (and so its project) from being deleted by the
  // workspace's own keys, which would revoke the run's project and environment keys with it.
  const appId = (await tenancy.projectApp(t.db.sql, prj))!;
  await deployments.insertDeployment(t.db.sql, {
    id: `dep-${name.replace(/[^a-z]/g, '').padEnd(16, 'z').slice(0, 16)}`, workspaceId: ws, projectId: prj, appId, environmentId: env,
    image: 'nginx:1.27', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1'],
  });
  const victims: string[] = [];
  for (let i = 0; i < 3; i++) victims.push((await t.api('/v1/keys', { body: { name: 'victim', scope: { workspaceId: ws }, permissions: ['deployments.read'] } })).body.id);
  return { workspaceId: ws, projectId: prj, environmentId: env, ids: [ws, prj, env, env2, ...victims], targets: [ws, prj, env, env2, ...victims] };
}

async function mint(t: TestCtrl, who: Tenant, tenantName: 'A' | 'B', perms: string[], level: (typeof LEVELS)[number]): Promise<Cred> {
  const scope = { workspaceId: who.workspaceId, ...(level !== 'workspace' ? { projectId: who.projectId } : {}), ...(level === 'environment' ? { environmentId: who.environmentId } : {}) };
  const r = await t.api('/v1/keys', { body: { name: `${perms.length} at ${level}`, scope, permissions: perms } });
  assert.equal(r.status, 201, r.text);
  who.ids.push(r.body.id);
  return { tenant: tenantName, token: r.body.key, perms: new Set(perms), label: `${tenantName}:${level}:${perms.length === PERMISSIONS.length ? 'all' : perms.join('+')}` };
}

/** Every row of a workspace that another workspace's key must never change, as one digest. */
async function rowsOf(t: TestCtrl, w: Tenant): Promise<string> {
  const [r] = await t.db.sql<{ d: string }[]>`
    SELECT md5(concat_ws('|',
      (SELECT string_agg(concat_ws(',', id, name, deleted_at), ';' ORDER BY id) FROM workspaces WHERE id = ${w.workspaceId}),
      (SELECT string_agg(concat_ws(',', id, name, deleted_at), ';' ORDER BY id) FROM projects WHERE workspace_id = ${w.workspaceId}),
      (SELECT string_agg(concat_ws(',', id, slug, hostname, deleted_at), ';' ORDER BY id) FROM environments WHERE workspace_id = ${w.workspaceId}),
      (SELECT string_agg(concat_ws(',', id, revoked_at, expires_at), ';' ORDER BY id) FROM api_keys WHERE workspace_id = ${w.workspaceId}),
      (SELECT string_agg(concat_ws(',', hostname, environment_id), ';' ORDER BY hostname) FROM hostname_claims WHERE workspace_id = ${w.workspaceId}),
      (SELECT count(*)::text FROM audit_log WHERE workspace_id = ${w.workspaceId}))) AS d`;
  return r!.d;
}

export interface TenancyFuzzFigures {
  requests: number;
  byStatus: Record<string, number>;
  credentials: number;
  endpoints: number;
  accepted: number;
  logLinesWithMarker: number;
}

/** Runs `runs` generated requests with seed `seed`; throws on the first broken property. */
export async function fuzzTenancy(runs: number, seed: number): Promise<TenancyFuzzFigures> {
  const log = captureLogger('debug');
  const t = await testCtrl({ keyRateLimit: 0, workspaceRateLimit: 0 }, { logger: log.logger, engine: { concurrency: 0 }, recoverEveryMs: 3_600_000, recoverAfterMs: 3_600_000, tenantCaps: { keysPerWorkspace: 10_000 } });
  const A = await tenant(t, 'fuzz-a');
  const B = await tenant(t, 'fuzz-b');
  const creds: Cred[] = [];
  for (const level of LEVELS) {
    for (const p of PERMISSIONS) creds.push(await mint(t, A, 'A', [p], level));
    creds.push(await mint(t, A, 'A', PERMISSIONS, level));
    creds.push(await mint(t, B, 'B', PERMISSIONS, level));
  }
  for (const perms of fc.sample(fc.subarray(PERMISSIONS, { minLength: 2 }), { numRuns: 8, seed })) creds.push(await mint(t, A, 'A', perms, 'workspace'));
  const revoked = await mint(t, A, 'A', PERMISSIONS, 'workspace');
  await t.api(`/v1/keys/${A.ids.at(-1)}`, { method: 'DELETE' });
  A.targets.push(A.ids.at(-1)!);
  creds.push({ ...revoked, perms: new Set(), label: 'A:revoked' });

  const endpoints = endpointsOf((await t.api('/openapi.json', { token: null })).body).filter((e) => TENANCY_PATH.test(e.path));
  assert.ok(endpoints.length >= 14, `tenancy endpoints in the document: ${endpoints.length}`);
  const ids = [...A.targets, ...B.targets, 'default'];
  const hostnames = ['www.fuzz-a.example', 'www.fuzz-b.example', 'unkey.local', `${A.ids[2]}.unkey.local`, 'dep-aaaaaaaaaaaaaaaa.unkey.local', 'fresh.example'];
  const hints = {
    workspaceId: fc.constantFrom(A.workspaceId, B.workspaceId, 'default'),
    projectId: fc.constantFrom(A.projectId, B.projectId),
    environmentId: fc.constantFrom(A.environmentId, B.environmentId),
    hostname: fc.constantFrom(...hostnames),
    id: fc.constantFrom(...ids, 'dep-zzzzzzzzzzzzzzzz', 'fresh-id'),
    regions: fc.constant([]),
    expiresAt: fc.integer({ min: 60, max: 86_400 * 400 }).map((s) => new Date(Date.now() + s * 1000).toISOString()),
  };
  /** A request whose {id} is, three times in four, one of the two workspaces' real ids. */
  const withRealId = (e: (typeof endpoints)[number], hostile: boolean): fc.Arbitrary<FuzzRequest> =>
    fc.tuple(requestOf(e, { hostile, hints }), fc.option(fc.constantFrom(...ids), { freq: 4 })).map(([req, id]) => {
      if (!id || !e.path.includes('{id}')) return req;
      const q = req.url.indexOf('?');
      return { ...req, url: e.path.replace('{id}', id) + (q >= 0 ? req.url.slice(q) : '') };
    });
  const requests = fc.oneof(
    { arbitrary: fc.oneof(...endpoints.map((e) => withRealId(e, true))), weight: 1 },
    { arbitrary: fc.oneof(...endpoints.map((e) => withRealId(e, false))), weight: 3 },
  );
  const figures: TenancyFuzzFigures = { requests: 0, byStatus: {}, credentials: creds.length, endpoints: endpoints.length, accepted: 0, logLinesWithMarker: 0 };
  const otherIds = (c: Cred) => (c.tenant === 'A' ? B : A).ids;

  await fc.assert(
    // Half the requests with a key holding everything (they get furthest), half with any other.
    fc.asyncProperty(fc.oneof(fc.constantFrom(...creds.filter((c) => c.perms.size === PERMISSIONS.length)), fc.constantFrom(...creds)), requests, async (cred, req) => {
      figures.requests++;
      const other = cred.tenant === 'A' ? B : A;
      const before = await rowsOf(t, other);
      const headers: Record<string, string> = { authorization: `Bearer ${cred.token}` };
      if (req.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(t.url + req.url, { method: req.method, headers, ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}), signal: AbortSignal.timeout(5_000) });
      const text = await res.text();
      figures.byStatus[res.status] = (figures.byStatus[res.status] ?? 0) + 1;
      const what = `${req.endpoint} as ${cred.label}: ${res.status} ${text.slice(0, 200)}`;
      assert.ok(res.status < 500, `${what} (a 5xx)`);
      assert.equal(await rowsOf(t, other), before, `${what} changed the other workspace's rows`);
      if (res.status >= 400) return;
      figures.accepted++;
      const need = NEEDS[req.endpoint];
      if (need !== undefined) assert.ok(need !== null && cred.perms.has(need), `${what}: a change accepted without ${need ?? 'an unscoped credential'}`);
      if (OWN_VIEWS.test(req.endpoint)) for (const id of otherIds(cred)) assert.ok(!text.includes(id), `${what}: names ${id} of the other workspace`);
    }),
    { numRuns: runs, seed, endOnFailure: true },
  );
  figures.logLinesWithMarker = log.lines.filter((l) => l.includes(MARKER)).length;
  assert.equal(figures.logLinesWithMarker, 0, 'log lines carry a generated value');
  return figures;
}
