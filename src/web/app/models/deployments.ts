// The deployments list as the page holds it, and how live events change it. Pure: data in,
// data out. A status event of a deployment the list does not hold yet asks for a reload (it
// was just created); everything else is patched in place.
import type { DeploymentSummary, RegionTopology } from '../../../cli/api.gen';
import type { LiveEvent } from '../../../live-events';

export const STATUSES = ['pending', 'building', 'deploying', 'network', 'ready', 'failed', 'stopped', 'rolled_back', 'superseded'] as const;

/** Statuses after which nothing moves unless someone acts. */
export const SETTLED = new Set(['ready', 'failed', 'stopped', 'rolled_back', 'superseded']);

export interface RegionCount {
  region: string;
  ready: number;
  wanted: number;
  failed: number;
  reason: string | null;
}

export interface Row {
  d: DeploymentSummary;
  /** Undefined until the deployment's progress has been read. */
  regions?: RegionCount[];
}

export function countsOf(topology: RegionTopology[]): RegionCount[] {
  return topology.map((t) => ({ region: t.region, ready: t.running, wanted: t.wanted, failed: t.failed.length, reason: t.failed[0]?.reason ?? null }));
}

type StatusEvent = Extract<LiveEvent, { type: 'deployment.status' }>;
type RegionEvent = Extract<LiveEvent, { type: 'deployment.region' }>;

/** Applies a status event; `known` false means the list does not hold the deployment. */
export function applyStatus(rows: Row[], e: StatusEvent): { rows: Row[]; known: boolean } {
  let known = false;
  const next = rows.map((r) => {
    if (r.d.id !== e.deploymentId) return r;
    known = true;
    // The event's status is one of the deployment's (src/live-events.ts types it as text).
    return { ...r, d: { ...r.d, status: e.status as DeploymentSummary['status'], error: e.error } };
  });
  return { rows: known ? next : rows, known };
}

export function applyRegion(rows: Row[], e: RegionEvent): Row[] {
  return rows.map((r) => {
    if (r.d.id !== e.deploymentId) return r;
    const count: RegionCount = { region: e.region, ready: e.running, wanted: e.wanted, failed: e.failed, reason: e.reason };
    const regions = r.regions ?? r.d.regions.map((region) => ({ region, ready: 0, wanted: r.d.replicas, failed: 0, reason: null }));
    const has = regions.some((x) => x.region === e.region);
    return { ...r, regions: has ? regions.map((x) => (x.region === e.region ? count : x)) : [...regions, count] };
  });
}

export function filterRows(rows: Row[], status: string): Row[] {
  return status ? rows.filter((r) => r.d.status === status) : rows;
}

export function source(d: Pick<DeploymentSummary, 'image' | 'buildContext'>): string {
  return d.image ?? (d.buildContext ? `build: ${d.buildContext}` : '–');
}

export type DeploymentAction = 'stop' | 'start' | 'rollback' | 'promote' | 'abort';

export interface ActionState {
  enabled: boolean;
  /** Why it is disabled, shown beside the button. */
  why?: string;
}

const PROGRESSIVE = new Set(['canary', 'blue-green']);

/**
 * Which actions make sense in the deployment's state, mirroring what the API accepts, so a
 * button is not offered only to be refused. The API still decides; its refusal is shown.
 */
export function deploymentActions(d: Pick<DeploymentSummary, 'status' | 'desiredState' | 'image' | 'strategy'>): Record<DeploymentAction, ActionState> {
  const gone = d.status === 'superseded' || d.status === 'rolled_back';
  const progressive = d.strategy !== undefined && PROGRESSIVE.has(d.strategy.type);
  return {
    stop:
      d.desiredState === 'stopped' ? { enabled: false, why: 'already stopped' } : d.status === 'failed' || gone ? { enabled: false, why: `it is ${d.status}` } : { enabled: true },
    start:
      d.desiredState !== 'stopped'
        ? { enabled: false, why: 'it is running' }
        : d.status === 'failed'
          ? { enabled: false, why: 'it failed: roll back or deploy again' }
          : { enabled: true },
    rollback: d.image ? { enabled: true } : { enabled: false, why: 'no image yet' },
    promote: d.status === 'ready' ? { enabled: true } : { enabled: false, why: 'only a ready deployment' },
    abort: !progressive
      ? { enabled: false, why: 'only canary or blue-green' }
      : SETTLED.has(d.status)
        ? { enabled: false, why: `it is ${d.status}` }
        : { enabled: true },
  };
}
