// The OpenAPI operations the simulator serves, generated from its resource list: for each
// kind the collection, object, status, scale and log paths with the verbs, query parameters
// (dryRun, fieldManager, fieldValidation, force) and the x-kubernetes-* extensions clients
// read. kubectl checks a PATCH operation's parameters for fieldValidation before it leaves
// validation to the server.
import { apiVersionOf, type ResourceDef } from '../resources';

export type Dialect = 'v2' | 'v3';

/** The definition name of a kind in the official spec (io.k8s.api.apps.v1.StatefulSet, …). */
export function definitionName(r: Pick<ResourceDef, 'group' | 'version' | 'kind'>): string {
  if (r.group === 'cilium.io') return `io.cilium.${r.version}.${r.kind}`;
  const g = r.group === '' ? 'core' : r.group.replace(/\.k8s\.io$/, '').replace(/\./g, '_');
  return `io.k8s.api.${g}.${r.version}.${r.kind}`;
}

const pascal = (s: string) => s.replace(/(^|[.-])([a-z])/g, (_m, _d, c: string) => c.toUpperCase());
const groupTag = (r: ResourceDef) => (r.group === '' ? 'Core' : pascal(r.group.replace(/\.k8s\.io$/, '').replace(/\.io$/, 'Io')));

function param(name: string, description: string, dialect: Dialect, type = 'string', inWhere = 'query'): Record<string, unknown> {
  return dialect === 'v2' ? { name, in: inWhere, description, type, uniqueItems: true } : { name, in: inWhere, description, schema: { type, uniqueItems: true } };
}

function queryParams(dialect: Dialect, forPatch: boolean): Record<string, unknown>[] {
  const out = [
    param('dryRun', 'When present, indicates that modifications should not be persisted.', dialect),
    param('fieldManager', 'A name associated with the actor or entity that is making these changes.', dialect),
    param('fieldValidation', 'How the server handles unknown or duplicate fields: Ignore, Warn or Strict.', dialect),
  ];
  if (forPatch) out.push(param('force', 'Force is going to "force" Apply requests.', dialect, 'boolean'));
  return out;
}

function ref(name: string, dialect: Dialect): Record<string, unknown> {
  const schema = { $ref: `${dialect === 'v2' ? '#/definitions/' : '#/components/schemas/'}${name}` };
  return dialect === 'v2' ? { description: 'OK', schema } : { description: 'OK', content: { 'application/json': { schema } } };
}

function op(r: ResourceDef, action: string, verbName: string, schema: string, dialect: Dialect, extra: { params?: Record<string, unknown>[]; gvk?: { group: string; version: string; kind: string }; body?: boolean } = {}): Record<string, unknown> {
  const gvk = extra.gvk ?? { group: r.group, version: r.version, kind: r.kind };
  const body = extra.body
    ? dialect === 'v2'
      ? [{ name: 'body', in: 'body', required: true, schema: { $ref: `#/definitions/${schema}` } }]
      : []
    : [];
  return {
    description: `${action} ${verbName}`,
    operationId: `${action}${groupTag(r)}${pascal(r.version)}${r.namespaced ? 'Namespaced' : ''}${verbName}`,
    tags: [`${r.group === '' ? 'core' : r.group}_${r.version}`],
    parameters: [...body, ...(extra.params ?? [])],
    ...(dialect === 'v3' && extra.body ? { requestBody: { content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } }, required: true } } : {}),
    responses: { '200': ref(schema, dialect) },
    'x-kubernetes-action': action === 'read' ? 'get' : action === 'replace' ? 'put' : action,
    'x-kubernetes-group-version-kind': gvk,
  };
}

/** The paths of one resource type. */
export function resourcePaths(r: ResourceDef, dialect: Dialect): Record<string, unknown> {
  const base = `${r.group === '' ? '/api' : `/apis/${r.group}`}/${r.version}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}`;
  const def = definitionName(r);
  const list = `${def}List`;
  const scope = r.namespaced ? [param('namespace', 'object name and auth scope', dialect, 'string', 'path')] : [];
  const named = [...scope, param('name', `name of the ${r.kind}`, dialect, 'string', 'path')];
  const status = 'io.k8s.apimachinery.pkg.apis.meta.v1.Status';
  const paths: Record<string, unknown> = {
    [base]: {
      get: op(r, 'list', r.kind, list, dialect),
      post: op(r, 'create', r.kind, def, dialect, { params: queryParams(dialect, false), body: true }),
      delete: op(r, 'deletecollection', `Collection${r.kind}`, status, dialect),
      parameters: scope,
    },
    [`${base}/{name}`]: {
      get: op(r, 'read', r.kind, def, dialect),
      put: op(r, 'replace', r.kind, def, dialect, { params: queryParams(dialect, false), body: true }),
      patch: op(r, 'patch', r.kind, def, dialect, { params: queryParams(dialect, true), body: true }),
      delete: op(r, 'delete', r.kind, status, dialect),
      parameters: named,
    },
  };
  if (r.hasStatus) {
    paths[`${base}/{name}/status`] = {
      get: op(r, 'read', `${r.kind}Status`, def, dialect),
      put: op(r, 'replace', `${r.kind}Status`, def, dialect, { params: queryParams(dialect, false), body: true }),
      patch: op(r, 'patch', `${r.kind}Status`, def, dialect, { params: queryParams(dialect, true), body: true }),
      parameters: named,
    };
  }
  if (r.scalable) {
    const scale = 'io.k8s.api.autoscaling.v1.Scale';
    const gvk = { group: 'autoscaling', version: 'v1', kind: 'Scale' };
    paths[`${base}/{name}/scale`] = {
      get: op(r, 'read', `${r.kind}Scale`, scale, dialect, { gvk }),
      put: op(r, 'replace', `${r.kind}Scale`, scale, dialect, { params: queryParams(dialect, false), gvk, body: true }),
      patch: op(r, 'patch', `${r.kind}Scale`, scale, dialect, { params: queryParams(dialect, true), gvk, body: true }),
      parameters: named,
    };
  }
  return paths;
}

/** Served kinds outside the official spec (the Cilium CRD) get an open schema, as a CRD
 *  without a structural schema would publish. */
export function crdDefinition(r: ResourceDef): Record<string, unknown> {
  return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, 'x-kubernetes-group-version-kind': [{ group: r.group, version: r.version, kind: r.kind }], description: `${r.kind} (${apiVersionOf(r)})` };
}
