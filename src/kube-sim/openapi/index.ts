// OpenAPI for clients that need it (kubectl apply's validation and explain): `/openapi/v2`
// (JSON; a protobuf-only Accept gets 406 so the client moves on) and `/openapi/v3` with one
// document per group-version. The schemas are the official ones (definitions.json, generated
// by scripts/gen-openapi.ts); the paths are generated from the resource list (paths.ts).
// Only served types appear (a custom resource without its CRD does not). Documents are built
// once per set of served types, on first request.
import { createHash } from 'node:crypto';
import { apiVersionOf, RESOURCES, versionDoc, type ResourceDef, type Served } from '../resources';
import { SimError } from '../status';
import generated from './definitions.json';
import { crdDefinition, definitionName, resourcePaths, type Dialect } from './paths';

const definitions = generated.definitions as Record<string, unknown>;

const info = () => ({ title: 'Kubernetes', version: versionDoc().gitVersion });

/** Every served kind's definitions: the official ones, plus open ones for CRDs. */
function allDefinitions(): Record<string, unknown> {
  const out: Record<string, unknown> = { ...definitions };
  for (const r of RESOURCES) if (!definitions[definitionName(r)]) out[definitionName(r)] = crdDefinition(r);
  return out;
}

/** The definitions a set of roots reaches through $ref. */
function reachable(all: Record<string, unknown>, roots: string[], prefix: string): Record<string, unknown> {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name) || !all[name]) return;
    seen.add(name);
    JSON.stringify(all[name], (k, v) => {
      if (k === '$ref' && typeof v === 'string' && v.startsWith(prefix)) visit(v.slice(prefix.length));
      return v;
    });
  };
  roots.forEach(visit);
  return Object.fromEntries([...seen].sort().map((n) => [n, all[n]]));
}

const toV3 = <T>(doc: T): T => JSON.parse(JSON.stringify(doc).replaceAll('"#/definitions/', '"#/components/schemas/')) as T;

function pathsOf(rs: readonly ResourceDef[], dialect: Dialect): Record<string, unknown> {
  return Object.assign({}, ...rs.map((r) => resourcePaths(r, dialect)));
}

const v2Cache = new Map<string, unknown>();
const v3Cache = new Map<string, Map<string, { doc: unknown; hash: string }>>();
const servedKey = (rs: readonly ResourceDef[]) => rs.map((r) => `${apiVersionOf(r)}/${r.plural}`).join(',');

function v2Doc(rs: readonly ResourceDef[]): unknown {
  const key = servedKey(rs);
  let doc = v2Cache.get(key);
  if (!doc) v2Cache.set(key, (doc = { swagger: '2.0', info: info(), paths: pathsOf(rs, 'v2'), definitions: allDefinitions() }));
  return doc;
}

function v3Docs(rs: readonly ResourceDef[]): Map<string, { doc: unknown; hash: string }> {
  const cached = v3Cache.get(servedKey(rs));
  if (cached) return cached;
  const all = allDefinitions();
  const byGv = new Map<string, ResourceDef[]>();
  for (const r of rs) {
    const key = r.group === '' ? 'api/v1' : `apis/${apiVersionOf(r)}`;
    byGv.set(key, [...(byGv.get(key) ?? []), r]);
  }
  const v3 = new Map<string, { doc: unknown; hash: string }>();
  for (const [key, group] of byGv) {
    const roots = group.flatMap((r) => [definitionName(r), `${definitionName(r)}List`]);
    roots.push('io.k8s.apimachinery.pkg.apis.meta.v1.Status', 'io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions');
    if (group.some((r) => r.scalable)) roots.push('io.k8s.api.autoscaling.v1.Scale');
    const doc = toV3({ openapi: '3.0.0', info: info(), paths: pathsOf(group, 'v3'), components: { schemas: reachable(all, roots, '#/definitions/') } });
    v3.set(key, { doc, hash: createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase() });
  }
  v3Cache.set(servedKey(rs), v3);
  return v3;
}

/** Whether the Accept header takes JSON (absent, `*\/*`, `application/*` or application/json). */
function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(',').some((p) => {
    const type = p.split(';')[0]!.trim().toLowerCase();
    return type === 'application/json' || type === '*/*' || type === 'application/*';
  });
}

const notAcceptable = () => new SimError(406, 'NotAcceptable', 'only the following media types are accepted: application/json');

/** Serves `path` (segments after the host, e.g. `openapi/v3/apis/apps/v1`). */
export function serveOpenApi(path: string, accept: string | undefined, served: Served = () => true): { status: number; body: unknown } | undefined {
  if (path !== 'openapi/v2' && !path.startsWith('openapi/v3')) return undefined;
  if (!acceptsJson(accept)) return { status: 406, body: notAcceptable().status };
  const rs = RESOURCES.filter(served);
  if (path === 'openapi/v2') return { status: 200, body: v2Doc(rs) };
  const docs = v3Docs(rs);
  if (path === 'openapi/v3') {
    return { status: 200, body: { paths: Object.fromEntries([...docs].map(([k, d]) => [k, { serverRelativeURL: `/openapi/v3/${k}?hash=${d.hash}` }])) } };
  }
  const d = docs.get(path.slice('openapi/v3/'.length));
  return d ? { status: 200, body: d.doc } : undefined;
}
