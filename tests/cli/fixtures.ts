// Whole API answers for table tests of the CLI and the web view, typed by the generated client
// (src/cli/api.gen.ts): a fixture that no longer matches what ctrl answers fails to compile, so
// the pure views are tested on the shapes the server really sends. Each takes overrides.
import type { DeploymentDetail, DeploymentSummary, RegionTopology, RegionView, RolloutView, SentinelView } from '../../src/cli/api.gen';

const EPOCH = new Date(0).toISOString();

export const deploymentSummary = (o: Partial<DeploymentSummary> = {}): DeploymentSummary => ({
  id: 'dep-1',
  status: 'deploying',
  desiredState: 'running',
  error: null,
  image: 'nginx:1.27',
  buildContext: null,
  regions: ['us-east-1', 'eu-west-1'],
  replicas: 2,
  cpuMillicores: 500,
  memoryMib: 512,
  port: 8080,
  command: [],
  envKeys: [],
  readOnlyRootFilesystem: false,
  workspaceId: 'default',
  projectId: 'default',
  appId: 'default',
  environmentId: 'default',
  rolledBackFrom: null,
  version: 'v1',
  rollbackOf: null,
  autoscaling: null,
  strategy: { type: 'rolling' },
  traceId: null,
  createdAt: EPOCH,
  updatedAt: EPOCH,
  ...o,
});

export const deploymentDetail = (o: Partial<DeploymentDetail> = {}): DeploymentDetail => ({
  ...deploymentSummary(),
  quarantined: null,
  topology: [],
  instances: [],
  domains: [],
  steps: [],
  invocations: [],
  analysis: { checks: [] },
  sentinels: [],
  ...o,
});

export const topology = (o: Partial<RegionTopology> & Pick<RegionTopology, 'region'>): RegionTopology => ({
  desiredStatus: 'running',
  wanted: 2,
  running: 0,
  pending: 0,
  status: 'starting',
  failed: [],
  applyFailure: null,
  autoscaling: null,
  regionStatus: 'online',
  regionLastSeenAt: null,
  ...o,
});

export const regionView = (o: Partial<RegionView> & Pick<RegionView, 'name'>): RegionView => ({
  status: 'online',
  lastSeenAt: null,
  agent: { id: null, version: null, leader: false },
  lag: { changes: 0, seconds: 0 },
  lastFullSyncAt: null,
  objects: {},
  drift: { repaired: 0, lastAt: null, lastObject: null, byKind: {} },
  failures: [],
  ...o,
});

export const sentinelView = (o: Partial<SentinelView> & Pick<SentinelView, 'id'>): SentinelView => ({
  workspaceId: 'default',
  projectId: 'default',
  appId: 'default',
  environmentId: 'default',
  region: 'us-east-1',
  image: 'sentinel:v1',
  replicas: 1,
  cpuMillicores: 100,
  memoryMib: 128,
  desiredState: 'running',
  availableReplicas: 1,
  updatedReplicas: 1,
  readyReplicas: 1,
  observedGeneration: 1,
  runningImage: 'sentinel:v1',
  health: 'healthy',
  observedSpecHash: null,
  deployStatus: 'ready',
  createdAt: EPOCH,
  updatedAt: EPOCH,
  ...o,
});

export const rolloutView = (o: Partial<RolloutView> = {}): RolloutView => ({ state: 'idle', ...o });
