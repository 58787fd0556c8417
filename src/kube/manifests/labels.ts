// Label and annotation keys krane puts on every object it owns. The label names are a contract
// (API.md "Labels on Kubernetes objects"): dashboards, operators and GC select by them.
import type { CiliumPolicyApply, DeploymentApply, RoutesApply, SentinelApply } from '../../sync/wire';

export const LABEL = {
  managedBy: 'app.kubernetes.io/managed-by',
  component: 'app.kubernetes.io/component',
  workspaceId: 'unkey.com/workspace.id',
  projectId: 'unkey.com/project.id',
  appId: 'unkey.com/app.id',
  environmentId: 'unkey.com/environment.id',
  deploymentId: 'unkey.com/deployment.id',
  sentinelId: 'unkey.com/sentinel.id',
} as const;

export const MANAGED_BY = 'krane';
export const COMPONENTS = ['deployment', 'sentinel', 'gossip', 'routes'] as const;
export type Component = (typeof COMPONENTS)[number];

/** The selector every list and watch of krane's objects uses. */
export const MANAGED_SELECTOR = `${LABEL.managedBy}=${MANAGED_BY}`;

export const ANNOTATION = {
  /**
   * refKey of the desired-state resource an object belongs to (e.g. `deployment_topology/dep-…`).
   * GC maps objects back to resources with it; the per-environment gossip objects have no id
   * label of their own, so labels alone could not say which cilium_network_policy they serve.
   */
  resource: 'unkey.com/resource',
  /** Region the desired state was for; lets an operator see a misrouted object at a glance. */
  region: 'unkey.com/region',
  /**
   * On a sentinel Deployment: the spec hash ctrl computed for the desired state it was built
   * from. krane echoes it in its status report once that spec is rolled out, which is how ctrl
   * knows READY is about the current spec and not an older one.
   */
  specHash: 'unkey.com/spec-hash',
  /** Hash of the manifest as krane last applied it; a match lets apply skip the request. */
  manifestHash: 'unkey.com/manifest-hash',
} as const;

type Scope = Pick<DeploymentApply, 'workspaceId' | 'projectId' | 'appId' | 'environmentId'>;

function scopeLabels(component: Component, s: Scope): Record<string, string> {
  return {
    [LABEL.managedBy]: MANAGED_BY,
    [LABEL.component]: component,
    [LABEL.workspaceId]: s.workspaceId,
    [LABEL.projectId]: s.projectId,
    [LABEL.appId]: s.appId,
    [LABEL.environmentId]: s.environmentId,
  };
}

export const deploymentLabels = (s: DeploymentApply) => ({ ...scopeLabels('deployment', s), [LABEL.deploymentId]: s.deploymentId });
export const sentinelLabels = (s: SentinelApply) => ({ ...scopeLabels('sentinel', s), [LABEL.sentinelId]: s.sentinelId });
export const gossipLabels = (s: CiliumPolicyApply) => scopeLabels('gossip', s);
export const routesLabels = (s: RoutesApply) => scopeLabels('routes', s);

export function isManaged(labels: Record<string, string> | undefined): boolean {
  return labels?.[LABEL.managedBy] === MANAGED_BY;
}
