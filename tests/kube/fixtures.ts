// Desired states shared by the kube tests.
import type { CiliumPolicyApply, DeploymentApply, RoutesApply, SentinelApply } from '../../src/sync/wire';

export const scope = { workspaceId: 'ws-a', projectId: 'prj-a', appId: 'app-a', environmentId: 'env-a' };

export function deploymentState(over: Partial<DeploymentApply> = {}): DeploymentApply {
  return {
    action: 'apply',
    kind: 'deployment',
    deploymentId: 'dep-aaaaaaaaaaaaaaaa',
    ...scope,
    region: 'us-east-1',
    namespace: 'unkey',
    image: 'registry.example/app:v1',
    replicas: 2,
    cpuMillicores: 250,
    memoryMib: 256,
    port: 8080,
    command: ['node', 'server.js'],
    env: { FOO: 'bar' },
    ...over,
  };
}

export function sentinelState(over: Partial<SentinelApply> = {}): SentinelApply {
  return {
    action: 'apply',
    kind: 'sentinel',
    sentinelId: 'snt-aaaaaaaaaaaaaaaa',
    ...scope,
    region: 'us-east-1',
    namespace: 'sentinel',
    image: 'registry.example/sentinel:v1',
    replicas: 2,
    cpuMillicores: 500,
    memoryMib: 512,
    specHash: 'spec-hash-of-the-fixture',
    ...over,
  };
}

export function policyState(over: Partial<CiliumPolicyApply> = {}): CiliumPolicyApply {
  return {
    action: 'apply',
    kind: 'cilium_network_policy',
    policyId: 'cnp-aaaaaaaaaaaaaaaa',
    ...scope,
    region: 'us-east-1',
    namespace: 'sentinel',
    ...over,
  };
}

export function routesState(over: Partial<RoutesApply> = {}): RoutesApply {
  return {
    action: 'apply',
    kind: 'environment_routes',
    ...scope,
    region: 'us-east-1',
    namespace: 'sentinel',
    hostname: 'app-a-production.unkey.app',
    backends: [{ deploymentId: 'dep-aaaaaaaaaaaaaaaa', weight: 100, replicas: 2 }],
    ...over,
  };
}
