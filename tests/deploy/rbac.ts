// Every Kubernetes API call krane makes, as RBAC sees it (verb, API group, resource, namespace,
// name where the request carries one), by part of krane; and calls it must never be allowed.
// tests/deploy/manifests.test.ts checks both against deploy/krane-rbac.yaml with `allowed`,
// RBAC's own matching rules. When krane gains a call, add it here: the test then says whether
// the install grants it.

export interface ApiCall {
  verb: string;
  group: string;
  resource: string;
  /** Namespace of a namespaced call; undefined for a cluster-scoped one. */
  namespace?: string;
  /** The object's name when the request names one (get, patch, delete; list/watch with a metadata.name field selector). */
  name?: string;
  why: string;
}

export interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}

const crud = ['get', 'list', 'watch', 'create', 'patch', 'delete'];
const each = (ns: string, group: string, resource: string, why: string, verbs = crud): ApiCall[] => verbs.map((verb) => ({ verb, group, resource, namespace: ns, ...(['get', 'patch', 'delete'].includes(verb) ? { name: 'x' } : {}), why }));

export const KRANE_API_CALLS: ApiCall[] = [
  // Deployments (apply, drift repair, delete, GC, inventory, drift watch) and their pods' status.
  ...each('unkey', '', 'services', 'workload headless Services'),
  ...each('unkey', 'apps', 'statefulsets', 'workload StatefulSets'),
  ...each('unkey', '', 'pods', 'instance status watch', ['list', 'watch']),
  // An autoscaled StatefulSet below its autoscaler's minimum, raised (src/kube/client.ts raiseReplicas).
  ...(['get', 'update'] as const).map((verb) => ({ verb, group: 'apps', resource: 'statefulsets/scale', namespace: 'unkey', name: 'x', why: 'raise to the autoscaler\'s minimum' })),
  // Leader election (src/kube/leader.ts): read, create when absent, renew / take over / release.
  ...each('unkey', 'coordination.k8s.io', 'leases', 'leader election Lease', ['get', 'create', 'update']).map((c) => ({ ...c, name: c.verb === 'create' ? undefined : 'krane-us-east-1' })),
  // Sentinels, their gossip objects, the routes ConfigMaps, and sentinel status.
  ...each('sentinel', '', 'services', 'sentinel and gossip Services'),
  ...each('sentinel', 'apps', 'deployments', 'sentinel Deployments'),
  ...each('sentinel', 'policy', 'poddisruptionbudgets', 'sentinel PodDisruptionBudgets'),
  ...each('sentinel', 'cilium.io', 'ciliumnetworkpolicies', 'gossip CiliumNetworkPolicies'),
  ...each('sentinel', '', 'configmaps', 'routes-<environment> ConfigMaps'),
  ...each('sentinel', '', 'pods', 'sentinel pod status watch', ['list', 'watch']),
  // The sentinels' credentials (src/kube/credentials-keeper.ts): watched by name, applied.
  ...(['list', 'watch', 'patch'] as const).map((verb) => ({ verb, group: '', resource: 'secrets', namespace: 'sentinel', name: 'sentinel-credentials', why: 'the Secret sentinel-credentials' })),
  { verb: 'create', group: '', resource: 'secrets', namespace: 'sentinel', why: 'a server-side apply that creates sentinel-credentials' },
].map((c) => (c.name === undefined ? (({ name: _n, ...rest }) => rest)(c) : c)) as ApiCall[];

export const FORBIDDEN_CALLS: ApiCall[] = [
  { verb: 'list', group: '', resource: 'secrets', namespace: 'sentinel', why: 'list every Secret of namespace sentinel' },
  { verb: 'get', group: '', resource: 'secrets', namespace: 'sentinel', name: 'other', why: 'read another Secret' },
  { verb: 'list', group: '', resource: 'secrets', namespace: 'unkey', why: 'read customer Secrets' },
  { verb: 'list', group: '', resource: 'secrets', namespace: 'kube-system', why: 'read cluster Secrets' },
  { verb: 'create', group: '', resource: 'namespaces', why: 'create namespaces (cluster-scoped)' },
  { verb: 'create', group: '', resource: 'pods/exec', namespace: 'unkey', name: 'x', why: 'exec into workloads' },
  { verb: 'update', group: 'apps', resource: 'statefulsets', namespace: 'unkey', name: 'x', why: 'update (krane only applies)' },
  { verb: 'deletecollection', group: 'apps', resource: 'statefulsets', namespace: 'unkey', why: 'delete collections' },
  { verb: 'create', group: 'apps', resource: 'deployments', namespace: 'unkey', why: 'Deployments among customer workloads' },
  { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'sentinel', name: 'x', why: 'Leases outside unkey' },
  { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings', namespace: 'unkey', why: 'grant itself more' },
];

/** RBAC's matching: group, resource, verb, and resourceNames (which never match a create or an unnamed list). */
export function allowed(rules: Rule[], c: ApiCall): boolean {
  return rules.some((r) => {
    if (!(r.apiGroups ?? []).some((g) => g === '*' || g === c.group)) return false;
    if (!(r.resources ?? []).some((x) => x === '*' || x === c.resource)) return false;
    if (!r.verbs.some((v) => v === '*' || v === c.verb)) return false;
    if (r.resourceNames && r.resourceNames.length > 0) return c.name !== undefined && r.resourceNames.includes(c.name);
    return true;
  });
}
