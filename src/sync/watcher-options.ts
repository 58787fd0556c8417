// krane's watcher: its options and their defaults (watcher.ts holds the stream handling).
import type { Logger } from '../log';
import type { DesiredState, PermanentError, ResourceController, ResourceRef } from './wire';

export interface WatcherOptions {
  controlPlaneUrl: string;
  token: string;
  region: string;
  controller: ResourceController;
  logger: Logger;
  /** Full resync period (the audit, not the repair). */
  resyncIntervalMs?: number;
  /** Resources handled at the same time. */
  concurrency?: number;
  onPermanentFailure?: (ref: ResourceRef, err: PermanentError, state: DesiredState) => void | Promise<void>;
  /** Reconnect delay after a failure: uniformly random in [min, max]. */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** `wait` sent to ctrl in seconds; absent: ctrl's limit. */
  waitSeconds?: number;
  /** No line for this long (heartbeats included) means the connection is dead. */
  idleTimeoutMs?: number;
  /** Longest feed line accepted (characters); a longer one is a protocol error. */
  maxLineBytes?: number;
  retries?: number;
  retryDelayMs?: number;
  /** false: polls do not ask for a handover, as a krane before it (benchmarks compare the two). */
  handover?: boolean;
  /** Events read from the stream ahead of their handlers; past it the watcher stops reading
   *  (the rest waits in the socket, and ctrl's write stall limit applies). */
  maxBacklog?: number;
}

/** Seed 004: an audit every five minutes catches drift made outside the feed. */
export const DEFAULT_RESYNC_INTERVAL_MS = 5 * 60_000;
/** Seeds 002/003: 1-5 s jitter spreads a fleet's reconnects after a ctrl restart. */
export const DEFAULT_BACKOFF_MIN_MS = 1_000;
export const DEFAULT_BACKOFF_MAX_MS = 5_000;
/** Kubernetes API calls are I/O bound; eight in flight keeps one API server busy but not flooded. */
export const DEFAULT_CONCURRENCY = 8;
/** Three missed ctrl heartbeats (10 s each): the connection is gone even if TCP has not said so. */
export const DEFAULT_IDLE_TIMEOUT_MS = 35_000;
/** Events read ahead of their handlers; bounds memory during a large snapshot. */
export const DEFAULT_MAX_BACKLOG = 10_000;
