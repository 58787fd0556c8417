// Authorization as the API server's RBAC authorizer decides it, from the Role, RoleBinding,
// ClusterRole and ClusterRoleBinding objects in the store: a request is allowed when some
// binding names the user (User), one of its groups (Group) or its ServiceAccount, and the
// bound role has a rule matching the verb, API group, resource (with subresource: `pods/log`,
// `statefulsets/scale`, `*/scale`), resource name, or non-resource URL (`/api/*`). Members of
// `system:masters` are allowed everything before RBAC is asked, as in a real cluster.
//
// The default policy a cluster bootstraps with is created as real objects (bootstrapPolicy),
// so discovery (`system:discovery`), `kubectl auth can-i` (`system:basic-user`) and health
// checks (`system:public-info-viewer`) work for any authenticated identity, and
// `kubectl get clusterroles` shows them.
import type { UserInfo } from './auth';
import type { ObjectStore } from './object-store';
import { mustResourceForKind } from './resources';
import { SimError } from './status';
import type { KubeObject } from './types';

/** What the authorizer is asked: the API server's authorizer.Attributes. */
export interface Attributes {
  verb: string;
  resourceRequest: boolean;
  /** The URL path (non-resource requests are matched on it). */
  path: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

export interface Decision {
  allowed: boolean;
  /** Why it was allowed (the binding and role), empty when denied. */
  reason: string;
}

const ROLE = mustResourceForKind('rbac.authorization.k8s.io/v1', 'Role');
const ROLE_BINDING = mustResourceForKind('rbac.authorization.k8s.io/v1', 'RoleBinding');
const CLUSTER_ROLE = mustResourceForKind('rbac.authorization.k8s.io/v1', 'ClusterRole');
const CLUSTER_ROLE_BINDING = mustResourceForKind('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding');

const has = (list: string[] | undefined, value: string) => (list ?? []).some((v) => v === '*' || v === value);

function resourceMatches(rule: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return (rule.resources ?? []).some((r) => r === '*' || r === combined || (subresource !== '' && r === `*/${subresource}`));
}

function nonResourceMatches(rule: PolicyRule, path: string): boolean {
  return (rule.nonResourceURLs ?? []).some((u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))));
}

/** Whether one PolicyRule grants the request (rbac/v1 helpers: VerbMatches and the rest). */
export function ruleAllows(rule: PolicyRule, a: Attributes): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (!a.resourceRequest) return nonResourceMatches(rule, a.path);
  if (!has(rule.apiGroups, a.apiGroup) || !resourceMatches(rule, a.resource, a.subresource)) return false;
  // A rule naming objects cannot grant a request that names none (list, create).
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(a.name);
}

/** The subject's description (rbac's describeSubject) when it names the user. */
function subjectMatches(s: Subject, user: UserInfo): string | undefined {
  if (s.kind === 'User' && s.name === user.name) return `User "${s.name}"`;
  if (s.kind === 'Group' && user.groups.includes(s.name)) return `Group "${s.name}"`;
  // A ServiceAccount subject must name its namespace; one without matches nobody.
  if (s.kind === 'ServiceAccount' && s.namespace && user.name === `system:serviceaccount:${s.namespace}:${s.name}`) return `ServiceAccount "${s.namespace}/${s.name}"`;
  return undefined;
}

function rulesOf(store: ObjectStore, roleRef: { kind?: string; name?: string }, ns: string): PolicyRule[] {
  const role = roleRef.kind === 'ClusterRole' ? store.get(CLUSTER_ROLE, '', roleRef.name ?? '') : roleRef.kind === 'Role' ? store.get(ROLE, ns, roleRef.name ?? '') : undefined;
  return (role?.rules as PolicyRule[] | undefined) ?? [];
}

function bindingAllows(store: ObjectStore, binding: KubeObject, user: UserInfo, a: Attributes): string | undefined {
  const ns = binding.metadata.namespace ?? '';
  const who = ((binding.subjects as Subject[] | undefined) ?? []).map((s) => subjectMatches(s, user)).find((w) => w !== undefined);
  if (!who) return undefined;
  const ref = (binding.roleRef ?? {}) as { kind?: string; name?: string };
  if (!rulesOf(store, ref, ns).some((r) => ruleAllows(r, a))) return undefined;
  const described = ns ? `RoleBinding "${binding.metadata.name}/${ns}"` : `ClusterRoleBinding "${binding.metadata.name}"`;
  return `RBAC: allowed by ${described} of ${ref.kind} "${ref.name}" to ${who}`;
}

/** The decision for a request: system:masters, then cluster-wide bindings, then the namespace's. */
export function authorize(store: ObjectStore, user: UserInfo, a: Attributes): Decision {
  if (user.groups.includes('system:masters')) return { allowed: true, reason: '' };
  for (const b of store.list(CLUSTER_ROLE_BINDING, undefined)) {
    const why = bindingAllows(store, b, user, a);
    if (why) return { allowed: true, reason: why };
  }
  if (a.resourceRequest && a.namespace) {
    for (const b of store.list(ROLE_BINDING, a.namespace)) {
      const why = bindingAllows(store, b, user, a);
      if (why) return { allowed: true, reason: why };
    }
  }
  return { allowed: false, reason: '' };
}

/** The text after `is forbidden: ` (responsewriters.forbiddenMessage). */
export function forbiddenMessage(user: UserInfo, a: Attributes): string {
  if (!a.resourceRequest) return `User "${user.name}" cannot ${a.verb} path "${a.path}"`;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  return `User "${user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${scope}`;
}

/** The 403 the API server sends for a request its authorizers did not allow. */
export function forbidden(user: UserInfo, a: Attributes, why = forbiddenMessage(user, a)): SimError {
  if (!a.resourceRequest) return new SimError(403, 'Forbidden', `forbidden: ${why}`, {});
  const qualified = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
  const message = a.name ? `${qualified} "${a.name}" is forbidden: ${why}` : `${qualified} is forbidden: ${why}`;
  return new SimError(403, 'Forbidden', message, { ...(a.name ? { name: a.name } : {}), group: a.apiGroup, kind: a.resource });
}

const BOOTSTRAP_META = {
  labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
  annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
};

const clusterRole = (name: string, rules: PolicyRule[]): KubeObject => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, ...structuredClone(BOOTSTRAP_META) }, rules });
const clusterBinding = (name: string, groups: string[]): KubeObject => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
  metadata: { name, ...structuredClone(BOOTSTRAP_META) },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
  subjects: groups.map((g) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: g })),
});

/** The default roles and bindings of the API server's bootstrap policy that clients rely on. */
export function bootstrapPolicy(): KubeObject[] {
  return [
    clusterRole('cluster-admin', [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, { nonResourceURLs: ['*'], verbs: ['*'] }]),
    clusterBinding('cluster-admin', ['system:masters']),
    clusterRole('system:discovery', [
      { nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'], verbs: ['get'] },
    ]),
    clusterBinding('system:discovery', ['system:authenticated']),
    clusterRole('system:basic-user', [
      { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'] },
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
    ]),
    clusterBinding('system:basic-user', ['system:authenticated']),
    clusterRole('system:public-info-viewer', [{ nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'], verbs: ['get'] }]),
    clusterBinding('system:public-info-viewer', ['system:authenticated', 'system:unauthenticated']),
  ];
}
