// Whether a deployment's instances have converged, from the per-region counts krane reports.
// Pure, so the deploy workflow and the status-report hook decide the same way.
import type { RegionProgress } from '../../store/deployments';

export type Progress =
  | { state: 'ready' }
  | { state: 'failed'; reason: string }
  | { state: 'stopped' }
  | { state: 'waiting'; waitingFor: string[] };

export function evaluateProgress(regions: RegionProgress[], desiredState: 'running' | 'stopped' = 'running'): Progress {
  if (desiredState === 'stopped') return { state: 'stopped' };
  if (regions.length === 0) return { state: 'waiting', waitingFor: ['topology'] };
  // Any failed instance fails the deploy at once: a crash loop or a bad image will not heal
  // by waiting, and the reason is what the user needs to see.
  for (const r of regions) {
    // The cluster refused the desired state itself (invalid, over quota, too large): no pod
    // will ever come, so waiting for one only delays the answer.
    if (r.applyFailure) return { state: 'failed', reason: `${r.region}: ${r.applyFailure.code}: ${r.applyFailure.reason}` };
    const f = r.failed[0];
    if (f) return { state: 'failed', reason: `${r.region}: ${f.podName}: ${f.reason ?? 'failed'}` };
  }
  const waitingFor = regions.filter((r) => r.desiredStatus !== 'running' || r.running < r.wanted).map((r) => `${r.region} ${r.running}/${r.wanted}`);
  return waitingFor.length === 0 ? { state: 'ready' } : { state: 'waiting', waitingFor };
}
