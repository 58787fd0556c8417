// The JSON shapes the page reads. Deployments, sentinels and invocations are the same contract
// the CLI reads (src/cli/api-types.ts, type-only); the rest is written against ../shared/API.md
// for endpoints and fields that may not be served yet (regions, traffic, strategies), so every
// such field is optional and the views say "not available" instead of breaking.
import type { DeploymentDetail as CliDetail, DeploymentSummary as CliSummary } from '../../cli/api-types';
export type { RegionTopology, SentinelView, LiveEvent } from '../../cli/api-types';

export interface Strategy {
  type: 'rolling' | 'canary' | 'blue-green' | string;
  steps?: { weight: number; pause?: string }[];
  analysis?: { interval?: string; failureLimit?: number; prometheus?: { url?: string; query?: string; min?: number; max?: number } };
  scaleDownDelay?: string;
}

export interface DeploymentSummary extends CliSummary {
  strategy?: Strategy;
  /** Per-region progress, when the list carries it (otherwise read from each deployment). */
  topology?: CliDetail['topology'];
}

export interface DeploymentDetail extends CliDetail {
  strategy?: Strategy;
  traceId?: string | null;
}

export interface Traffic {
  environmentId: string;
  hostname: string;
  backends: { deploymentId: string; weight: number }[];
}

export interface RegionView {
  name: string;
  status: 'online' | 'offline' | 'never_seen' | string;
  lastSeenAt: string | null;
  agent: { id: string; version: string; leader: boolean } | null;
  lag: { changes: number; seconds: number } | null;
  lastFullSyncAt: string | null;
  objects: number | Record<string, number> | null;
  drift?: { repaired: number; lastAt: string | null; lastObject: string | null } | null;
  failures?: { resourceType: string; resourceId: string; code: string; reason: string }[];
}

/** One wave's sentinels by outcome (GET /v1/sentinel-rollouts/current). */
export interface RolloutWave {
  index: number;
  percentage?: number;
  total: number;
  succeeded: number;
  failed: number;
  skipped: number;
  pending: number;
}

export interface RolloutView {
  state: 'idle' | 'in_progress' | 'paused' | 'rolling_back' | 'cancelled' | 'completed' | string;
  rolloutId?: string;
  image?: string;
  wavePercentages?: number[];
  waves?: RolloutWave[];
  currentWave?: number;
  succeeded?: number;
  failed?: number;
  skippedOffline?: number;
  /** First pages of each outcome's ids (the API pages the rest with ?list=&cursor=). */
  succeededIds?: string[];
  failedIds?: string[];
  skippedIds?: string[];
  /** Wave and reason of each failed or skipped sentinel listed. */
  notes?: Record<string, { wave: number; reason?: string }>;
  /** Already on the image when the rollout started. */
  skipped?: number;
  reverted?: number;
  slackWebhookUrl?: string;
  startedAt?: string;
  updatedAt?: string;
}
