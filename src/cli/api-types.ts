// The shapes ctrl's public API answers with (src/http/api), as the client reads them. Dates
// arrive as ISO strings. Kept apart from the server's types so the client depends only on the
// JSON contract, not on store rows.
export type { LiveEvent } from '../live-events';

export interface DeploymentSummary {
  id: string;
  status: string;
  /** Absent or `rolling` for a plain deploy; canary and blue-green move traffic step by step. */
  strategy?: { type: string } | null;
  desiredState: string;
  error: string | null;
  image: string | null;
  buildContext: string | null;
  regions: string[];
  replicas: number;
  cpuMillicores: number;
  memoryMib: number;
  port: number;
  command: string[];
  /** Names of the env variables; their values are never shown (they go to krane only). */
  envKeys: string[];
  readOnlyRootFilesystem: boolean;
  environmentId: string;
  rolledBackFrom: string | null;
  /** Unique in the environment (absent from a ctrl older than versions). */
  version?: string;
  /** Seed 001's name for rolledBackFrom. */
  rollbackOf?: string | null;
  /** Set when the image is quarantined in the environment (detail view only). */
  quarantined?: { reason: string; deploymentId: string } | null;
  /** Replicas follow CPU between these bounds (null: a fixed replica count). */
  autoscaling?: { minReplicas: number; maxReplicas: number; cpuUtilization: number } | null;
  /** Trace of the deployment's workflow in the OTLP backend; null when tracing was off
   *  (absent from a ctrl older than tracing). */
  traceId?: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface RegionTopology {
  region: string;
  desiredStatus: string;
  wanted: number;
  running: number;
  pending: number;
  failed: { podName: string; reason: string | null }[];
  /** Seed 001's topology status, from krane's reports: starting, started, stopping, stopped. */
  status?: 'starting' | 'started' | 'stopping' | 'stopped';
  /** With autoscaling: the bounds, the replicas running and the autoscaler's wish. */
  autoscaling?: { min: number; max: number; current: number | null; desired: number | null; cpuUtilization?: number | null } | null;
  /** The region's agent liveness (null: ctrl has no registry, or the region is not known). */
  regionStatus?: 'online' | 'offline' | 'never_seen' | null;
  regionLastSeenAt?: string | null;
}

export interface DeploymentDetail extends DeploymentSummary {
  topology: RegionTopology[];
  instances: { region: string; podName: string; address: string | null; status: string; reason: string | null; updatedAt: string }[];
  domains: { hostname: string; kind: string }[];
  steps: { name: string; kind: string; status: string; failure: { message: string } | null; createdAt: string; completedAt: string | null }[];
  invocations: { id: string; handler: string; status: string; createdAt: string }[];
  /** The environment's sentinels in the deployment's regions; one not `converged` did not hold
   *  the deploy unless the deploy created it (absent from a ctrl before issue 33). */
  sentinels?: { id: string; region: string; image: string; runningImage: string | null; deployStatus: string; health: string; converged: boolean }[];
}

export interface SentinelView {
  id: string;
  environmentId: string;
  region: string;
  image: string;
  replicas: number;
  desiredState: string;
  readyReplicas: number;
  availableReplicas: number;
  runningImage: string | null;
  health: string;
  deployStatus: string;
  updatedAt: string;
}

export interface SentinelDeployResult {
  sentinelId: string;
  status?: 'READY' | 'FAILED';
  image?: string;
  reason?: string;
  /** Present instead of status when deployed with ?wait=false. */
  invocationId?: string;
}

export interface InvocationSummary {
  id: string;
  service: string;
  handler: string;
  key: string | null;
  status: string;
  error: { name: string; message: string; code: string } | null;
  attempts: number;
  createdAt: string;
  completedAt: string | null;
}

export interface JournalEntry {
  seq: number;
  kind: string;
  name: string;
  status: string;
  failure: { message: string; code?: string } | null;
  createdAt: string;
  completedAt: string | null;
}

export interface InvocationDetail extends InvocationSummary {
  input: unknown;
  result?: unknown;
  journal: JournalEntry[];
}
