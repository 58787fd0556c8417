// The per-region progress of one deployment as `--wait` shows it, folded from two sources:
// snapshots (GET /v1/deployments/:id, the truth at the time it was read) and live events
// (`deployment.status`, `deployment.region`), which arrive between snapshots. Pure.
import type { DeploymentDetail } from './api.gen';
import type { LiveEvent } from '../live-events';

export interface RegionState {
  region: string;
  wanted: number;
  running: number;
  pending: number;
  failed: number;
  reason: string | null;
  /** Set while the region's agent is offline: when it was last seen (null: never). */
  offline?: { lastSeenAt: string | null };
}

export interface ProgressState {
  id: string;
  status: string;
  error: string | null;
  regions: RegionState[];
  /** Canary or blue-green: traffic moves step by step, so its share is worth showing. */
  progressive?: boolean;
  /** A canary's or blue-green's share of its environment's traffic, once an event said it. */
  trafficWeight?: number;
  /** The last analysis check of this deployment. */
  analysis?: { signal: string; verdict: string; value: number | null };
  /** The compare judge's last verdict per region, with its reason in words (issue 27). */
  judged?: Record<string, { verdict: string; reason: string | null }>;
}

/** Statuses a deployment does not leave on its own; `superseded` is one the workflow may set. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['ready', 'failed', 'stopped', 'superseded', 'rolled_back']);

/** Order of the deploy workflow's statuses; a deploy only moves forward through them. */
const STATUS_ORDER = ['pending', 'building', 'deploying', 'network'];
const rank = (status: string) => (TERMINAL_STATUSES.has(status) ? STATUS_ORDER.length : Math.max(0, STATUS_ORDER.indexOf(status)));

export function fromDeployment(d: DeploymentDetail): ProgressState {
  const byRegion = new Map(d.topology.map((t) => [t.region, t]));
  // Before the deploy step writes topologies (pending, building) only the request says what is wanted.
  const regions = [...new Set([...d.regions, ...byRegion.keys()])].sort().map((region): RegionState => {
    const t = byRegion.get(region);
    if (!t) return { region, wanted: d.replicas, running: 0, pending: 0, failed: 0, reason: null };
    const down = t.regionStatus === 'offline' || t.regionStatus === 'never_seen';
    return {
      region, wanted: t.wanted, running: t.running, pending: t.pending, failed: t.failed.length, reason: t.failed[0]?.reason ?? null,
      ...(down ? { offline: { lastSeenAt: t.regionLastSeenAt ?? null } } : {}),
    };
  });
  const progressive = d.strategy?.type === 'canary' || d.strategy?.type === 'blue-green';
  return { id: d.id, status: d.status, error: d.error, regions, ...(progressive ? { progressive } : {}) };
}

/**
 * A snapshot over the current state. A GET sent before an event but answered after it would
 * move the status backwards; statuses only move forward, so the later one is kept.
 */
export function mergeSnapshot(prev: ProgressState | undefined, d: DeploymentDetail): ProgressState {
  // Traffic and analysis come from events only: a snapshot keeps what they said.
  const next = { ...fromDeployment(d), ...(prev?.trafficWeight !== undefined ? { trafficWeight: prev.trafficWeight } : {}), ...(prev?.analysis ? { analysis: prev.analysis } : {}), ...(prev?.judged ? { judged: prev.judged } : {}) };
  return prev && rank(prev.status) > rank(next.status) ? { ...next, status: prev.status, error: prev.error } : next;
}

export function applyEvent(s: ProgressState, e: LiveEvent): ProgressState {
  if (e.type === 'deployment.traffic') {
    // A rolling deploy takes 100% once ready; only a step-by-step move is news.
    return s.progressive ? { ...s, trafficWeight: e.backends.find((b) => b.deploymentId === s.id)?.weight ?? 0 } : s;
  }
  if (!('deploymentId' in e) || e.deploymentId !== s.id) return s;
  if (e.type === 'deployment.analysis' && e.judge === 'compare' && e.region) return { ...s, judged: { ...s.judged, [e.region]: { verdict: e.verdict, reason: e.reason } } };
  if (e.type === 'deployment.analysis') return { ...s, analysis: { signal: e.signal, verdict: e.verdict, value: e.value } };
  if (e.type === 'deployment.status') {
    // Events may arrive late or be replayed after a newer snapshot: never move backwards, and a
    // terminal status is final.
    if (TERMINAL_STATUSES.has(s.status) || rank(e.status) < rank(s.status)) return s;
    return { ...s, status: e.status, error: e.error };
  }
  if (e.type === 'deployment.region') {
    const known = s.regions.some((r) => r.region === e.region);
    const next = (prev: RegionState | undefined): RegionState => ({
      region: e.region,
      wanted: e.wanted,
      running: e.running,
      // Events carry no pending count; what is neither running nor failed cannot exceed the rest.
      pending: Math.max(0, Math.min(prev?.pending ?? 0, e.wanted - e.running - e.failed)),
      failed: e.failed,
      reason: e.reason,
      // Liveness comes with snapshots only; an event keeps what the last one said.
      ...(prev?.offline ? { offline: prev.offline } : {}),
    });
    const regions = known ? s.regions.map((r) => (r.region === e.region ? next(r) : r)) : [...s.regions, next(undefined)].sort((a, b) => a.region.localeCompare(b.region));
    return { ...s, regions };
  }
  return s;
}
