// Pure mapping from the store's desired rows to the wire's DesiredState.
//
// - topology running → DeploymentApply in WORKLOAD_NAMESPACE; stopped → delete.
// - A running topology whose deployment has no image yet (still building) maps to delete: there
//   is nothing krane could run, and nothing of it can exist in the cluster yet, so delete is a
//   no-op there. The deploy workflow writes topology rows only after the image is known; a
//   topology written earlier reaches krane with its next change (setDeploymentImage records none).
// - sentinel and cilium policy running → their apply in SENTINEL_NAMESPACE; stopped → delete.
// - a routing table → its apply in SENTINEL_NAMESPACE for each region it lists (no stopped state).
// - A resource without a row (deleted by cascade) → delete.
import {
  SENTINEL_NAMESPACE,
  WORKLOAD_NAMESPACE,
  refKey,
  sentinelSpecHash,
  type DesiredState,
  type ResourceRef,
  type ResourceType,
} from './wire';
import type { CiliumDesiredRow, DesiredRows, RoutesDesiredRow, SentinelDesiredRow, TopologyDesiredRow } from '../store/desired-state';

const DELETE: DesiredState = { action: 'delete' };

export function topologyState(r: TopologyDesiredRow): DesiredState {
  if (r.desiredStatus !== 'running' || !r.image) return DELETE;
  return {
    action: 'apply',
    kind: 'deployment',
    deploymentId: r.deploymentId,
    workspaceId: r.workspaceId,
    projectId: r.projectId,
    appId: r.appId,
    environmentId: r.environmentId,
    region: r.region,
    namespace: WORKLOAD_NAMESPACE,
    image: r.image,
    replicas: r.replicas,
    cpuMillicores: r.cpuMillicores,
    memoryMib: r.memoryMib,
    port: r.port,
    command: r.command,
    env: r.env,
    readOnlyRootFilesystem: r.readOnlyRootFilesystem ?? false,
    ...(r.autoscaling ? { autoscaling: r.autoscaling } : {}),
    ...(r.desiredGeneration !== undefined ? { generation: r.desiredGeneration } : {}),
  };
}

/** Where an object of the sentinel namespace belongs: the same six fields for every kind there. */
function sentinelScope(r: { workspaceId: string; projectId: string; appId: string; environmentId: string; region: string }) {
  return { workspaceId: r.workspaceId, projectId: r.projectId, appId: r.appId, environmentId: r.environmentId, region: r.region, namespace: SENTINEL_NAMESPACE };
}

export function sentinelState(r: SentinelDesiredRow): DesiredState {
  if (r.desiredState !== 'running') return DELETE;
  return {
    action: 'apply',
    kind: 'sentinel',
    sentinelId: r.id,
    ...sentinelScope(r),
    image: r.image,
    replicas: r.replicas,
    cpuMillicores: r.cpuMillicores,
    memoryMib: r.memoryMib,
    specHash: sentinelSpecHash(r),
  };
}

export function ciliumState(r: CiliumDesiredRow): DesiredState {
  if (r.desiredState !== 'running') return DELETE;
  return {
    action: 'apply',
    kind: 'cilium_network_policy',
    policyId: r.id,
    ...sentinelScope(r),
  };
}

/** A routing table row exists only for the regions it applies to; absence is the delete. */
export function routesState(r: RoutesDesiredRow): DesiredState {
  return {
    action: 'apply',
    kind: 'environment_routes',
    ...sentinelScope(r),
    hostname: r.hostname,
    backends: r.backends.map((b) => ({ deploymentId: b.deploymentId, weight: b.weight, replicas: b.replicas, ...(b.ordinals ? { ordinals: b.ordinals } : {}) })),
  };
}

export interface ResourceState {
  resource: ResourceRef;
  state: DesiredState;
}

/** Turns a batch of rows into (resource, state) pairs. */
export function statesOf(batch: DesiredRows): ResourceState[] {
  switch (batch.type) {
    case 'deployment_topology':
      return batch.rows.map((r) => ({ resource: { type: batch.type, id: r.deploymentId, region: r.region }, state: topologyState(r) }));
    case 'sentinel':
      return batch.rows.map((r) => ({ resource: { type: batch.type, id: r.id, region: r.region }, state: sentinelState(r) }));
    case 'cilium_network_policy':
      return batch.rows.map((r) => ({ resource: { type: batch.type, id: r.id, region: r.region }, state: ciliumState(r) }));
    case 'environment_routes':
      return batch.rows.map((r) => ({ resource: { type: batch.type, id: r.environmentId, region: r.region }, state: routesState(r) }));
  }
}

/** refKey → state for every loaded row; a requested resource missing from it means delete. */
export function stateMap(batches: DesiredRows[]): Map<string, DesiredState> {
  const m = new Map<string, DesiredState>();
  for (const b of batches) for (const s of statesOf(b)) m.set(refKey(s.resource), s.state);
  return m;
}

export const stateFor = (m: Map<string, DesiredState>, type: ResourceType, id: string): DesiredState =>
  m.get(refKey({ type, id })) ?? DELETE;
