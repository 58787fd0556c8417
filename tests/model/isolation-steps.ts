// The steps of the isolation model (tests/model/isolation.test.ts), as fast-check arbitraries and
// what each does on the real stack. B's steps are what a tenant does with its own key (make
// environments, deploy, stop, start, promote, roll back, scale its sentinel, make and revoke
// keys, delete an environment); they name B's things by index in creation order, so the same step
// means the same thing in both runs. A's steps are arbitrary calls with A's keys (random
// permissions and scopes) naming any id: B's (environments, deployments, sentinels, hostnames,
// the workspace and project, even keys), A's own, or hostile strings. A may also work in its own
// workspace (make environments, deploy) so that names and clusters are shared for real.
//
// B never gives a hostname or an id A could take first: B's given hostnames live under its own
// namespace, its ids are generated. First come, first served is the rule for names a tenant
// chooses (as DNS is), so A taking one before B asks for it is not a breach of isolation.
import fc from 'fast-check';
import { APEX, KEY_PERMISSIONS, REGION, type Answer, type Tenant, type World } from './isolation-world';

const IMAGES = ['nginx:1.27', 'nginx:1.28', 'registry.local/app:crash-1'] as const;
const SLUGS = ['production', 'staging', 'preview'] as const;
const VERBS = ['stop', 'start', 'promote', 'rollback', 'abort'] as const;

export type BStep =
  | { who: 'B'; op: 'env'; slug: string; given: boolean }
  | { who: 'B'; op: 'deploy'; env: number; image: string }
  | { who: 'B'; op: 'verb'; verb: (typeof VERBS)[number]; dep: number }
  | { who: 'B'; op: 'key'; perms: string[] }
  | { who: 'B'; op: 'revoke'; key: number }
  | { who: 'B'; op: 'scale'; sentinel: number; replicas: number }
  | { who: 'B'; op: 'deleteEnv'; env: number };

/** Where an id A names comes from: one of B's kinds, A's own, or a hostile string. */
export type Pool = 'bEnv' | 'bDep' | 'bSnt' | 'bWs' | 'bPrj' | 'bKey' | 'bHost' | 'bDepHost' | 'aEnv' | 'aDep' | 'hostile';
export interface Pick {
  pool: Pool;
  i: number;
}

export type AStep = {
  who: 'A';
  key: number;
  act:
    | { op: 'env'; id: Pick | null; hostname: Pick | null; slug: string }
    | { op: 'deploy'; env: Pick }
    | { op: 'verb'; verb: (typeof VERBS)[number]; dep: Pick }
    | { op: 'sentinel'; snt: Pick; image: boolean }
    | { op: 'delete'; what: 'environments' | 'projects' | 'workspaces'; id: Pick }
    | { op: 'key'; ws: Pick; prj: Pick | null; env: Pick | null; perms: string[] }
    | { op: 'revoke'; key: Pick }
    | { op: 'read'; path: number; id: Pick }
    | { op: 'write'; path: number; id: Pick }
    | { op: 'anonymous'; path: number; id: Pick }
    | { op: 'flood'; id: Pick };
};

export type Step = BStep | AStep;

export interface AKeySpec {
  perms: string[];
  level: 'workspace' | 'project' | 'environment';
}

const HOSTILE = ['', 'default', '..', 'x'.repeat(300), 'dep-', 'env-zzzzzzzzzzzzzzzz', "' OR 1=1 --", '\u{1F4A5}', 'DEP-UPPER', `${APEX}`, '%2e%2e'];
const READS = ['/v1/deployments/{id}', '/v1/environments/{id}', '/v1/environments/{id}/traffic', '/v1/environments/{id}/versions', '/v1/deployments?environmentId={id}', '/v1/sentinels?environmentId={id}', '/v1/audit?target={id}', '/v1/workspaces/{id}', '/v1/workspaces/{id}/projects', '/v1/projects/{id}/environments', '/v1/invocations/{id}', '/v1/environments/{id}/quarantine', '/v1/events?deploymentId={id}'];
const WRITES = ['/v1/environments/{id}/rollback', '/v1/invocations/{id}/cancel', '/v1/workspaces/{id}/features', '/v1/workspaces/{id}/projects', '/v1/environments/{id}/quarantine/nginx:1.27'];

const pick = (pools: Pool[]) => fc.record({ pool: fc.constantFrom(...pools), i: fc.nat(7) });
const anyPick = pick(['bEnv', 'bDep', 'bSnt', 'bWs', 'bPrj', 'bKey', 'bHost', 'bDepHost', 'aEnv', 'aDep', 'hostile']);
const perms = fc.subarray([...KEY_PERMISSIONS], { minLength: 1 });

export const bStep: fc.Arbitrary<BStep> = fc.oneof(
  { arbitrary: fc.record({ who: fc.constant('B' as const), op: fc.constant('env' as const), slug: fc.constantFrom(...SLUGS), given: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ who: fc.constant('B' as const), op: fc.constant('deploy' as const), env: fc.nat(3), image: fc.constantFrom(...IMAGES) }), weight: 4 },
  { arbitrary: fc.record({ who: fc.constant('B' as const), op: fc.constant('verb' as const), verb: fc.constantFrom(...VERBS), dep: fc.nat(4) }), weight: 4 },
  { arbitrary: fc.record({ who: fc.constant('B' as const), op: fc.constant('key' as const), perms }), weight: 1 },
  { arbitrary: fc.record({ who: fc.constant('B' as const), op: fc.constant('revoke' as const), key: fc.nat(3) }), weight: 1 },
  { arbitrary: fc.record({ who: fc.constant('B' as const), op: fc.constant('scale' as const), sentinel: fc.nat(2), replicas: fc.integer({ min: 1, max: 2 }) }), weight: 1 },
  { arbitrary: fc.record({ who: fc.constant('B' as const), op: fc.constant('deleteEnv' as const), env: fc.nat(3) }), weight: 1 },
);

const aAct: fc.Arbitrary<AStep['act']> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('env' as const), id: fc.option(anyPick, { nil: null }), hostname: fc.option(pick(['bHost', 'bDepHost', 'hostile', 'bEnv', 'bDep']), { nil: null }), slug: fc.constantFrom(...SLUGS, 'evil') }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('deploy' as const), env: pick(['bEnv', 'aEnv', 'aEnv', 'hostile']) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('verb' as const), verb: fc.constantFrom(...VERBS), dep: pick(['bDep', 'aDep', 'hostile', 'bEnv']) }), weight: 2 },
  fc.record({ op: fc.constant('sentinel' as const), snt: pick(['bSnt', 'hostile', 'bEnv']), image: fc.boolean() }),
  fc.record({ op: fc.constant('delete' as const), what: fc.constantFrom('environments' as const, 'projects' as const, 'workspaces' as const), id: anyPick }),
  fc.record({ op: fc.constant('key' as const), ws: pick(['bWs', 'hostile', 'bEnv']), prj: fc.option(pick(['bPrj', 'hostile']), { nil: null }), env: fc.option(pick(['bEnv', 'aEnv']), { nil: null }), perms }),
  fc.record({ op: fc.constant('revoke' as const), key: pick(['bKey', 'hostile']) }),
  fc.record({ op: fc.constant('read' as const), path: fc.nat(READS.length - 1), id: anyPick }),
  fc.record({ op: fc.constant('write' as const), path: fc.nat(WRITES.length - 1), id: anyPick }),
  fc.record({ op: fc.constant('anonymous' as const), path: fc.nat(READS.length - 1), id: anyPick }),
  fc.record({ op: fc.constant('flood' as const), id: anyPick }),
);

const ALL_A_KEY: AKeySpec[] = [{ perms: [...KEY_PERMISSIONS], level: 'workspace' }];
const aDo = (act: AStep['act']): AStep => ({ who: 'A', key: 0, act });

/**
 * The breaks the issue found by attack, as sequences the property always runs first (fast-check
 * `examples`): a model that could not find them would be no proof of anything. Each needs B's
 * deployment ready first; A then names B's public things.
 */
export const KNOWN_ATTACKS: [AKeySpec[], Step[]][] = [
  // B's generated hostname given to A's environment, then A's ready deploy in it.
  [ALL_A_KEY, [{ who: 'B', op: 'deploy', env: 0, image: 'nginx:1.27' }, aDo({ op: 'env', id: null, hostname: { pool: 'bHost', i: 0 }, slug: 'evil' }), aDo({ op: 'deploy', env: { pool: 'aEnv', i: 1 } })]],
  // B's deployment's own hostname, the same way.
  [ALL_A_KEY, [{ who: 'B', op: 'deploy', env: 0, image: 'nginx:1.27' }, aDo({ op: 'env', id: null, hostname: { pool: 'bDepHost', i: 0 }, slug: 'evil' }), aDo({ op: 'deploy', env: { pool: 'aEnv', i: 1 } })]],
  // An environment named like B's deployment: A's deploy there puts its id in A's socket's cache, then B stops its deployment.
  [ALL_A_KEY, [{ who: 'B', op: 'deploy', env: 0, image: 'nginx:1.27' }, aDo({ op: 'env', id: { pool: 'bDep', i: 0 }, hostname: null, slug: 'evil' }), aDo({ op: 'deploy', env: { pool: 'aEnv', i: 1 } }), { who: 'B', op: 'verb', verb: 'stop', dep: 0 }]],
];
export const aStep: fc.Arbitrary<AStep> = fc.record({ who: fc.constant('A' as const), key: fc.nat(2), act: aAct });
/** A's keys: the first holds every permission in the whole workspace (the strongest a tenant has),
 *  the others random permissions at random levels. */
export const aKeySpecs: fc.Arbitrary<AKeySpec[]> = fc
  .array(fc.record({ perms, level: fc.constantFrom('workspace' as const, 'project' as const, 'environment' as const) }), { maxLength: 2 })
  .map((rest) => [{ perms: [...KEY_PERMISSIONS], level: 'workspace' as const }, ...rest]);

export const describe = (s: Step) => JSON.stringify(s);

/** B's things in creation order, read for one run: what B's indices and A's picks resolve to. */
async function idsOf(world: World, t: Tenant) {
  const sql = world.stack.db.sql;
  const ws = t.workspaceId;
  const col = async (q: Promise<{ id: string }[]>) => (await q).map((r) => r.id);
  const envs = await sql<{ id: string; hostname: string | null; appId: string; slug: string }[]>`SELECT id, hostname, app_id, slug FROM environments WHERE workspace_id = ${ws} AND deleted_at IS NULL ORDER BY created_at, id`;
  const deps = await col(sql<{ id: string }[]>`SELECT id FROM deployments WHERE workspace_id = ${ws} ORDER BY created_at, id`);
  return {
    envs: envs.map((e) => e.id),
    hosts: envs.map((e) => e.hostname ?? `${e.appId}-${e.slug}.${APEX}`),
    deps,
    sentinels: await col(sql<{ id: string }[]>`SELECT s.id FROM sentinels s JOIN environments e ON e.id = s.environment_id WHERE s.workspace_id = ${ws} ORDER BY e.created_at, s.region`),
    // B's own key (the first) is never revoked by B: it reads every observation.
    keys: (await col(sql<{ id: string }[]>`SELECT id FROM api_keys WHERE workspace_id = ${ws} AND revoked_at IS NULL ORDER BY created_at, id`)).slice(1),
  };
}

const at = <T>(list: readonly T[], i: number): T | undefined => (list.length ? list[i % list.length] : undefined);

/** Runs B's step in one run; returns its answer (compared between the runs), or null when it names nothing. */
export async function runB(world: World, t: Tenant, s: BStep, counter: { hostnames: number }): Promise<Answer | null> {
  const token = t.keys[0]!.key;
  const ids = await idsOf(world, t);
  switch (s.op) {
    case 'env': {
      const hostname = s.given ? `h${counter.hostnames++}.${t.ns}.example` : undefined;
      return world.call(`/v1/projects/${t.projectId}/environments`, { token, body: { slug: s.slug, regions: [REGION], ...(hostname ? { hostname } : {}) } });
    }
    case 'deploy': {
      const env = at(ids.envs, s.env);
      return env ? world.call('/v1/deployments', { token, body: { image: s.image, regions: [REGION], replicas: 1, environmentId: env } }) : null;
    }
    case 'verb': {
      const dep = at(ids.deps, s.dep);
      return dep ? world.call(`/v1/deployments/${dep}/${s.verb}`, { token, method: 'POST', ...(s.verb === 'rollback' ? { body: {} } : {}) }) : null;
    }
    case 'key':
      return world.call('/v1/keys', { token, body: { name: 'made by B', scope: { workspaceId: t.workspaceId }, permissions: s.perms } });
    case 'revoke': {
      const key = at(ids.keys, s.key);
      return key ? world.call(`/v1/keys/${key}`, { token, method: 'DELETE' }) : null;
    }
    case 'scale': {
      const snt = at(ids.sentinels, s.sentinel);
      return snt ? world.call(`/v1/sentinels/${snt}/deploy?wait=false`, { token, body: { replicas: s.replicas } }) : null;
    }
    case 'deleteEnv': {
      const env = at(ids.envs, s.env);
      return env ? world.call(`/v1/environments/${env}`, { token, method: 'DELETE' }) : null;
    }
  }
}

/** Resolves A's pick against B2's things and A's own. */
async function resolver(world: World, b: Tenant, a: Tenant) {
  const bi = await idsOf(world, b);
  const ai = await idsOf(world, a);
  const pools: Record<Pool, readonly string[]> = {
    bEnv: bi.envs, bDep: bi.deps, bSnt: bi.sentinels, bWs: [b.workspaceId], bPrj: [b.projectId], bKey: [...bi.keys, b.keys[0]!.id],
    bHost: bi.hosts, bDepHost: bi.deps.map((d) => `${d}.${APEX}`), aEnv: ai.envs, aDep: ai.deps, hostile: HOSTILE,
  };
  return (p: Pick) => at(pools[p.pool], p.i) ?? at(HOSTILE, p.i)!;
}

/** Runs A's step against B2 (answers ignored: only what B sees is judged). */
export async function runA(world: World, b: Tenant, a: Tenant, s: AStep): Promise<void> {
  const id = await resolver(world, b, a);
  const token = at(a.keys, s.key)!.key;
  const e = encodeURIComponent;
  const x = s.act;
  const calls: Promise<unknown>[] = [];
  const call = (path: string, init: Parameters<World['call']>[1] = {}) => calls.push(world.call(path, { token, ...init }).catch(() => undefined));
  switch (x.op) {
    case 'env':
      call(`/v1/projects/${a.projectId}/environments`, { body: { slug: x.slug, regions: [REGION], ...(x.id ? { id: id(x.id) } : {}), ...(x.hostname ? { hostname: id(x.hostname) } : {}) } });
      break;
    case 'deploy':
      call('/v1/deployments', { body: { image: 'nginx:1.27', regions: [REGION], replicas: 1, environmentId: id(x.env) } });
      break;
    case 'verb':
      call(`/v1/deployments/${e(id(x.dep))}/${x.verb}`, { method: 'POST', body: {} });
      break;
    case 'sentinel':
      call(`/v1/sentinels/${e(id(x.snt))}/deploy?wait=false`, { body: x.image ? { image: 'docker.io/attacker/implant:1' } : { replicas: 3 } });
      break;
    case 'delete':
      call(`/v1/${x.what}/${e(id(x.id))}`, { method: 'DELETE' });
      break;
    case 'key':
      call('/v1/keys', { body: { name: 'made by A', scope: { workspaceId: id(x.ws), ...(x.prj ? { projectId: id(x.prj) } : {}), ...(x.env ? { environmentId: id(x.env) } : {}) }, permissions: x.perms } });
      break;
    case 'revoke':
      call(`/v1/keys/${e(id(x.key))}`, { method: 'DELETE' });
      break;
    case 'read':
      call(READS[x.path]!.replace('{id}', e(id(x.id))));
      break;
    case 'write':
      call(WRITES[x.path]!.replace('{id}', e(id(x.id))), { method: x.path === 2 ? 'PUT' : x.path === 4 ? 'DELETE' : 'POST', ...(x.path === 4 ? {} : { body: x.path === 2 ? { canary: false } : x.path === 3 ? { name: 'evil' } : { version: '1' } }) });
      break;
    case 'anonymous':
      calls.push(world.call(READS[x.path]!.replace('{id}', e(id(x.id))), { token: `uik_${'x'.repeat(43)}` }).catch(() => undefined));
      break;
    case 'flood':
      for (let i = 0; i < 20; i++) call(`/v1/deployments/${e(id(x.id))}`);
      break;
  }
  await Promise.all(calls);
}
