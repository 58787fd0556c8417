// The resource types the simulator serves and the discovery documents built from them. The
// client's KubernetesObjectApi maps kind → plural and namespaced-ness through the resource
// lists served here, so every kind krane touches must be listed with the right names.

export interface ResourceDef {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  /** Whether `/status` is a subresource (status is then ignored on main-resource writes). */
  hasStatus: boolean;
  /** Whether spec changes bump metadata.generation (the workload kinds and CRDs). */
  tracksGeneration: boolean;
  /** Whether `/scale` serves an autoscaling/v1 Scale of spec.replicas. */
  scalable?: boolean;
  /** `kubectl get all` lists the kinds in the `all` category. */
  categories?: string[];
  /** Updates must carry metadata.resourceVersion (the registry forbids unconditional ones). */
  requiresResourceVersion?: boolean;
  /** Served only while this CustomResourceDefinition exists (crds.ts), as a custom resource. */
  crd?: string;
  /** The verbs discovery lists when not the full set (create-only reviews). */
  verbs?: string[];
}

export const apiVersionOf = (r: Pick<ResourceDef, 'group' | 'version'>): string => (r.group ? `${r.group}/${r.version}` : r.version);

/** Identifies a resource type in maps: `group/version/plural`. */
export const resourceKey = (r: Pick<ResourceDef, 'group' | 'version' | 'plural'>): string => `${r.group}/${r.version}/${r.plural}`;

export const RESOURCES: readonly ResourceDef[] = [
  { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', singular: 'namespace', namespaced: false, shortNames: ['ns'], hasStatus: true, tracksGeneration: false },
  { group: '', version: 'v1', kind: 'Service', plural: 'services', singular: 'service', namespaced: true, shortNames: ['svc'], hasStatus: true, tracksGeneration: false, categories: ['all'] },
  { group: '', version: 'v1', kind: 'Pod', plural: 'pods', singular: 'pod', namespaced: true, shortNames: ['po'], hasStatus: true, tracksGeneration: true, categories: ['all'] },
  { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', singular: 'configmap', namespaced: true, shortNames: ['cm'], hasStatus: false, tracksGeneration: false },
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', singular: 'secret', namespaced: true, hasStatus: false, tracksGeneration: false },
  { group: '', version: 'v1', kind: 'Event', plural: 'events', singular: 'event', namespaced: true, shortNames: ['ev'], hasStatus: false, tracksGeneration: false },
  { group: '', version: 'v1', kind: 'ResourceQuota', plural: 'resourcequotas', singular: 'resourcequota', namespaced: true, shortNames: ['quota'], hasStatus: true, tracksGeneration: false },
  { group: 'apps', version: 'v1', kind: 'StatefulSet', plural: 'statefulsets', singular: 'statefulset', namespaced: true, shortNames: ['sts'], hasStatus: true, tracksGeneration: true, scalable: true, categories: ['all'] },
  { group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', singular: 'deployment', namespaced: true, shortNames: ['deploy'], hasStatus: true, tracksGeneration: true, scalable: true, categories: ['all'] },
  { group: 'policy', version: 'v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', singular: 'poddisruptionbudget', namespaced: true, shortNames: ['pdb'], hasStatus: true, tracksGeneration: true },
  // Served like a real cluster's, stored only: the simulator's pod network enforces nothing (the
  // restricted-egress overlay is applied to it in tests/deploy/overlays.test.ts).
  { group: 'networking.k8s.io', version: 'v1', kind: 'NetworkPolicy', plural: 'networkpolicies', singular: 'networkpolicy', namespaced: true, shortNames: ['netpol'], hasStatus: false, tracksGeneration: true },
  { group: 'autoscaling', version: 'v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers', singular: 'horizontalpodautoscaler', namespaced: true, shortNames: ['hpa'], hasStatus: true, tracksGeneration: true, categories: ['all'] },
  { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', singular: 'lease', namespaced: true, hasStatus: false, tracksGeneration: false, requiresResourceVersion: true },
  { group: 'cilium.io', version: 'v2', kind: 'CiliumNetworkPolicy', plural: 'ciliumnetworkpolicies', singular: 'ciliumnetworkpolicy', namespaced: true, shortNames: ['cnp', 'ciliumnp'], hasStatus: true, tracksGeneration: true, crd: 'ciliumnetworkpolicies.cilium.io' },
  { group: '', version: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', singular: 'serviceaccount', namespaced: true, shortNames: ['sa'], hasStatus: false, tracksGeneration: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role', plural: 'roles', singular: 'role', namespaced: true, hasStatus: false, tracksGeneration: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding', plural: 'rolebindings', singular: 'rolebinding', namespaced: true, hasStatus: false, tracksGeneration: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', singular: 'clusterrole', namespaced: false, hasStatus: false, tracksGeneration: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding', plural: 'clusterrolebindings', singular: 'clusterrolebinding', namespaced: false, hasStatus: false, tracksGeneration: false },
  { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', singular: 'customresourcedefinition', namespaced: false, shortNames: ['crd', 'crds'], hasStatus: true, tracksGeneration: true },
  { group: 'authorization.k8s.io', version: 'v1', kind: 'SelfSubjectAccessReview', plural: 'selfsubjectaccessreviews', singular: 'selfsubjectaccessreview', namespaced: false, hasStatus: false, tracksGeneration: false, verbs: ['create'] },
];

/** Whether a type is served: built-in ones always, custom resources while their CRD exists. */
export type Served = (def: ResourceDef) => boolean;
const ALL: Served = () => true;

const byPath = new Map<string, ResourceDef>(RESOURCES.map((r) => [resourceKey(r), r]));
const byKind = new Map<string, ResourceDef>(RESOURCES.map((r) => [`${apiVersionOf(r)}/${r.kind}`, r]));

export function findResource(group: string, version: string, plural: string, served: Served = ALL): ResourceDef | undefined {
  const def = byPath.get(`${group}/${version}/${plural}`);
  return def && served(def) ? def : undefined;
}

export function resourceForKind(apiVersion: string, kind: string): ResourceDef | undefined {
  return byKind.get(`${apiVersion}/${kind}`);
}

/** The type a ResourceQuota key counts: `pods`, `services`, `count/deployments.apps`, … */
export function resourceForQuotaKey(key: string): ResourceDef | undefined {
  const resource = key.startsWith('count/') ? key.slice('count/'.length) : key;
  const dot = resource.indexOf('.');
  const plural = dot < 0 ? resource : resource.slice(0, dot);
  const group = dot < 0 ? '' : resource.slice(dot + 1);
  return RESOURCES.find((r) => r.plural === plural && r.group === group);
}

export function mustResourceForKind(apiVersion: string, kind: string): ResourceDef {
  const r = resourceForKind(apiVersion, kind);
  if (!r) throw new Error(`kube-sim: unknown kind ${apiVersion}/${kind}`);
  return r;
}

const groups = (served: Served): Map<string, string[]> => {
  const m = new Map<string, string[]>();
  for (const r of RESOURCES) {
    if (!r.group || !served(r)) continue;
    const vs = m.get(r.group) ?? [];
    if (!vs.includes(r.version)) vs.push(r.version);
    m.set(r.group, vs);
  }
  return m;
};

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export function apiVersionsDoc(serverAddress: string) {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

export function apiGroupListDoc(served: Served = ALL) {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups(served)].map(([name, versions]) => ({
      name,
      versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
    })),
  };
}

export function apiGroupDoc(group: string, served: Served = ALL) {
  const versions = groups(served).get(group);
  if (!versions) return undefined;
  return {
    kind: 'APIGroup',
    apiVersion: 'v1',
    name: group,
    versions: versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v })),
    preferredVersion: { groupVersion: `${group}/${versions[0]}`, version: versions[0] },
  };
}

export function apiResourceListDoc(group: string, version: string, served: Served = ALL) {
  const rs = RESOURCES.filter((r) => r.group === group && r.version === version && served(r));
  if (rs.length === 0) return undefined;
  const resources: unknown[] = [];
  for (const r of rs) {
    resources.push({
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs ?? VERBS,
      ...(r.shortNames ? { shortNames: r.shortNames } : {}),
      ...(r.categories ? { categories: r.categories } : {}),
    });
    if (r.hasStatus) {
      resources.push({ name: `${r.plural}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: ['get', 'patch', 'update'] });
    }
    if (r.scalable) {
      resources.push({ name: `${r.plural}/scale`, singularName: '', namespaced: r.namespaced, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] });
    }
    if (r.kind === 'Pod') resources.push({ name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
}

/**
 * The release whose OpenAPI the simulator serves (openapi/source/, whose README says why 1.31);
 * openapi.test.ts holds this and the generated definitions to one version. kubectl on these
 * machines is a dispatcher that runs the kubectl of this minor version.
 */
export function versionDoc() {
  return {
    major: '1',
    minor: '31',
    gitVersion: 'v1.31.0-kube-sim',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.22.5',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}
