// What B can observe, read the same way in both runs and put in a form where the runs compare
// equal when nothing of A reached B (tests/model/isolation.test.ts). Ids are replaced by names
// given in creation order (B's environments E1, E2…, deployments D1…, keys K1…), B's hostname
// namespace by NS; times, request and trace ids, and what depends on the machine's speed
// (instance rows, journal steps, observed replica counts, region liveness) are left out. Lists are
// compared as sets: some are ordered by random ids. Anything of A that reached B would keep an
// id the renaming does not know, or change a count, and the runs would differ.
import { KubeClient } from '../../src/kube/client';
import { SENTINEL_NAMESPACE, WORKLOAD_NAMESPACE } from '../../src/sync/wire';
import { APEX, REGION, type Tenant, type World } from './isolation-world';

/** Keys whose values are times, per-request ids, or follow the machine's speed. */
const VOLATILE = new Set([
  'createdAt', 'updatedAt', 'completedAt', 'at', 'lastSeenAt', 'regionLastSeenAt', 'regionStatus', 'requestId', 'traceId', 'sourceIp',
  'invocationId', 'invocations', 'steps', 'instances', 'next', 'running', 'pending', 'failed',
]);
/** A time in an answer, alone or inside a message: whether it is there matters (a key revoked), not when. */
const ISO_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g;
/** A generated id left after renaming: something B saw that is not B's. */
export const FOREIGN_ID = /\b(dep|env|snt|ws|prj|app|key|cnp)-[a-z2-7]{16}\b/;

/** Names given so far, per tenant: a sentinel or policy row goes with its environment, while
 *  B's audit rows and answers keep naming it. */
const given = new WeakMap<Tenant, Map<string, string>>();

/** The renaming of one tenant's ids, read from the database (the order things were made in),
 *  with every name given before kept. */
export async function namesOf(world: World, t: Tenant): Promise<[string, string][]> {
  const known = given.get(t) ?? new Map<string, string>();
  given.set(t, known);
  for (const [id, n] of await currentNames(world, t)) known.set(id, n);
  // Longest first, so an id inside a longer name (a pod name) is replaced whole.
  return [...known].sort((a, b) => b[0].length - a[0].length);
}

async function currentNames(world: World, t: Tenant): Promise<[string, string][]> {
  const sql = world.stack.db.sql;
  const ws = t.workspaceId;
  const pairs: [string, string][] = [[ws, 'W'], [t.projectId, 'P'], [t.ns, 'NS']];
  for (const [i, r] of (await sql<{ id: string }[]>`SELECT id FROM apps WHERE workspace_id = ${ws} ORDER BY created_at, id`).entries()) pairs.push([r.id, `APP${i + 1}`]);
  const envs = await sql<{ id: string }[]>`SELECT id FROM environments WHERE workspace_id = ${ws} ORDER BY created_at, id`;
  const envName = new Map(envs.map((r, i) => [r.id, `E${i + 1}`]));
  for (const [id, n] of envName) pairs.push([id, n]);
  for (const [i, r] of (await sql<{ id: string }[]>`SELECT id FROM deployments WHERE workspace_id = ${ws} ORDER BY created_at, id`).entries()) pairs.push([r.id, `D${i + 1}`]);
  for (const r of await sql<{ id: string; environmentId: string; region: string }[]>`SELECT id, environment_id, region FROM sentinels WHERE workspace_id = ${ws}`) pairs.push([r.id, `S:${envName.get(r.environmentId)}:${r.region}`]);
  for (const r of await sql<{ id: string; environmentId: string; region: string }[]>`SELECT id, environment_id, region FROM cilium_network_policies WHERE workspace_id = ${ws}`) pairs.push([r.id, `C:${envName.get(r.environmentId)}:${r.region}`]);
  for (const [i, r] of (await sql<{ id: string }[]>`SELECT id FROM api_keys WHERE workspace_id = ${ws} ORDER BY created_at, id`).entries()) pairs.push([r.id, `K${i + 1}`]);
  return pairs;
}

/** `v` renamed, without volatile keys, with every array sorted: the form two runs compare in. */
export function normalize(v: unknown, names: [string, string][]): unknown {
  const rename = (s: string) => names.reduce((acc, [from, to]) => acc.split(from).join(to), s);
  const walk = (x: unknown): unknown => {
    if (typeof x === 'string') return x.startsWith('uik_') ? 'SECRET' : rename(x.replace(ISO_TIME, 'TIME'));
    if (Array.isArray(x)) return x.map(walk).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    if (x && typeof x === 'object') {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(x).sort()) if (!VOLATILE.has(k)) out[rename(k)] = walk((x as Record<string, unknown>)[k]);
      return out;
    }
    return x;
  };
  return walk(v);
}

const pick = <T extends Record<string, unknown>>(o: T | null | undefined, keys: string[]) => (o ? Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]])) : o);

/**
 * Every GET B may make of its workspace, as B's own key: tenancy, deployments (each in detail),
 * traffic, versions, sentinels, keys, and B's audit rows.
 */
export async function apiView(world: World, t: Tenant): Promise<unknown> {
  const key = t.keys[0]!.key;
  const get = async (path: string) => {
    const r = await world.call(path, { token: key });
    return { status: r.status, body: r.body };
  };
  const envs = await get(`/v1/projects/${t.projectId}/environments`);
  const out: Record<string, unknown> = {
    workspaces: await get('/v1/workspaces'),
    workspace: await get(`/v1/workspaces/${t.workspaceId}`),
    projects: await get(`/v1/workspaces/${t.workspaceId}/projects`),
    environments: envs,
    keys: await get('/v1/keys'),
    audit: (await get('/v1/audit?limit=1000')).body?.entries?.map((e: any) => pick(e, ['actor', 'action', 'target', 'outcome', 'scope'])),
    sentinels: (await get('/v1/sentinels?limit=1000')).body?.sentinels?.map((s: any) => pick(s, ['id', 'environmentId', 'region', 'image', 'replicas', 'desiredState'])),
  };
  for (const e of envs.body?.environments ?? []) {
    out[`env ${e.id}`] = await get(`/v1/environments/${e.id}`);
    out[`traffic ${e.id}`] = await get(`/v1/environments/${e.id}/traffic`);
    out[`versions ${e.id}`] = await get(`/v1/environments/${e.id}/versions`);
    const list = await get(`/v1/deployments?environmentId=${e.id}`);
    out[`deployments ${e.id}`] = list;
    for (const d of list.body?.deployments ?? []) {
      const one = await get(`/v1/deployments/${d.id}`);
      out[`deployment ${d.id}`] = { status: one.status, body: { ...one.body, topology: one.body?.topology?.map((x: any) => pick(x, ['region', 'desiredStatus', 'wanted'])) } };
    }
  }
  return out;
}

/** The events B's socket carried that do not depend on timing: statuses and traffic tables. */
export function eventView(events: any[]): unknown[] {
  return events
    .filter((e) => e.type === 'deployment.status' || e.type === 'deployment.traffic')
    .map((e) => (e.type === 'deployment.status' ? pick(e, ['type', 'deploymentId', 'status', 'error']) : pick(e, ['type', 'environmentId', 'hostname', 'backends'])));
}

type Obj = { metadata: { name: string; labels?: Record<string, string> }; spec?: any; data?: Record<string, string> };

/**
 * B's part of the cluster: its workloads and sentinels (by their workspace label) and every routes
 * ConfigMap that names one of B's hostnames, whoever's it is.
 */
export async function clusterView(world: World, t: Tenant, hostnames: ReadonlySet<string>): Promise<unknown> {
  const api = new KubeClient(world.stack.regions.get(REGION)!.sim.sim.kubeConfig());
  const label = `unkey.com/workspace.id=${t.workspaceId}`;
  const sets = (await api.list('apps/v1', 'StatefulSet', WORKLOAD_NAMESPACE, label)).items as unknown as Obj[];
  const snts = (await api.list('apps/v1', 'Deployment', SENTINEL_NAMESPACE, label)).items as unknown as Obj[];
  const cms = (await api.list('v1', 'ConfigMap', SENTINEL_NAMESPACE)).items as unknown as Obj[];
  const routes = cms
    .filter((c) => c.metadata.name.startsWith('routes-') && hostnames.has(JSON.parse(c.data?.['routes.json'] ?? '{}').hostname))
    .map((c) => ({ name: c.metadata.name, routes: JSON.parse(c.data!['routes.json']!) }));
  return {
    workloads: sets.map((s) => ({ name: s.metadata.name, replicas: s.spec?.replicas, image: s.spec?.template?.spec?.containers?.[0]?.image, labels: s.metadata.labels })),
    sentinels: snts.map((s) => ({ name: s.metadata.name, replicas: s.spec?.replicas, image: s.spec?.template?.spec?.containers?.[0]?.image })),
    routes,
  };
}

/** The hostnames B's environments and deployments are reached on, as B's own answers name them. */
export async function hostnamesOf(world: World, t: Tenant): Promise<Set<string>> {
  const key = t.keys[0]!.key;
  const out = new Set<string>();
  const envs = (await world.call(`/v1/projects/${t.projectId}/environments`, { token: key })).body?.environments ?? [];
  for (const e of envs) {
    out.add(e.hostname);
    for (const d of (await world.call(`/v1/deployments?environmentId=${e.id}`, { token: key })).body?.deployments ?? []) out.add(`${d.id}.${APEX}`);
  }
  return out;
}

/**
 * What A can list of its own (workspaces, environments, deployments, sentinels, keys,
 * invocations), and what its event socket carried, as the set of ids they name (every `id` and
 * `…Id` field): none may be one of B's things. The other half of isolation: B's observations
 * are judged by comparison, A's by this. Free text (a hostname A gave) may repeat B's public
 * ids; A chose it.
 */
export async function aView(world: World, a: Tenant, events: unknown[]): Promise<Set<string>> {
  const key = a.keys[0]!.key;
  const get = async (path: string) => (await world.call(path, { token: key })).body;
  const envs = await get(`/v1/projects/${a.projectId}/environments`);
  const deps = [];
  for (const e of envs?.environments ?? []) deps.push(await get(`/v1/deployments?environmentId=${encodeURIComponent(e.id)}`));
  const ids = new Set<string>();
  const walk = (x: unknown): void => {
    if (Array.isArray(x)) return x.forEach(walk);
    if (!x || typeof x !== 'object') return;
    for (const [k, v] of Object.entries(x)) {
      if ((k === 'id' || k.endsWith('Id') || k === 'key') && typeof v === 'string') ids.add(v);
      else walk(v);
    }
  };
  walk({ workspaces: await get('/v1/workspaces'), envs, deps, sentinels: await get('/v1/sentinels?limit=1000'), keys: await get('/v1/keys'), invocations: await get('/v1/invocations?limit=1000'), events });
  return ids;
}
