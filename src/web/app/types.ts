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
  /** The evidence of each analysis check (issue 27); read leniently by models/judge.ts. */
  analysis?: { checks: unknown[] };
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
}

export interface RolloutSentinel {
  id: string;
  wave?: number;
  status?: 'pending' | 'READY' | 'FAILED' | string;
  reason?: string;
  previousImage?: string;
}

export interface RolloutView {
  state: 'idle' | 'in_progress' | 'paused' | 'rolling_back' | 'cancelled' | 'completed' | string;
  rolloutId?: string;
  image?: string;
  wavePercentages?: number[];
  waves?: { index: number; sentinels: RolloutSentinel[] }[];
  currentWave?: number;
  succeededIds?: string[];
  failedIds?: string[];
  /** API.md: sentinels of offline regions, with the reason (ids alone from older ctrls). */
  skippedIds?: (string | { id: string; reason?: string })[];
  skipped?: number;
  reverted?: number;
  slackWebhookUrl?: string;
  startedAt?: string;
  updatedAt?: string;
}
