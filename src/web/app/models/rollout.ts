// The fleet rollout as the page shows it: per-wave progress and which actions the API accepts
// in each state (the same rules as src/http/api/rollouts.ts, which answers 409 otherwise).
import type { RolloutView } from '../types';

export type RolloutAction = 'start' | 'resume' | 'cancel' | 'rollback';

const ALLOWED: Record<RolloutAction, readonly string[]> = {
  start: ['idle', 'completed', 'cancelled'],
  resume: ['paused'],
  cancel: ['in_progress', 'paused'],
  rollback: ['paused', 'cancelled'],
};

export function rolloutActions(state: string): Record<RolloutAction, boolean> {
  return {
    start: ALLOWED.start.includes(state),
    resume: ALLOWED.resume.includes(state),
    cancel: ALLOWED.cancel.includes(state),
    rollback: ALLOWED.rollback.includes(state),
  };
}

/** States the rollback button names when it is disabled. */
export const allowedIn = (a: RolloutAction) => ALLOWED[a];

export interface WaveProgress {
  index: number;
  /** Cumulative share of the fleet this wave brings the rollout to, when known. */
  percentage?: number;
  total: number;
  succeeded: number;
  failed: number;
  skipped: number;
  pending: number;
  phase: 'done' | 'running' | 'waiting' | 'failed';
}

export function skippedOf(r: RolloutView): { id: string; reason?: string }[] {
  return (r.skippedIds ?? []).map((s) => (typeof s === 'string' ? { id: s } : s));
}

export function waveProgress(r: RolloutView): WaveProgress[] {
  const skipped = new Set(skippedOf(r).map((s) => s.id));
  const current = r.currentWave ?? 0;
  return (r.waves ?? []).map((w) => {
    let succeeded = 0;
    let failed = 0;
    let skip = 0;
    for (const s of w.sentinels) {
      if (skipped.has(s.id)) skip++;
      else if (s.status === 'READY') succeeded++;
      else if (s.status === 'FAILED') failed++;
    }
    const total = w.sentinels.length;
    const pending = total - succeeded - failed - skip;
    const phase: WaveProgress['phase'] =
      failed > 0 ? 'failed' : pending === 0 && total > 0 ? 'done' : w.index === current && r.state === 'in_progress' ? 'running' : w.index < current ? 'done' : 'waiting';
    return { index: w.index, percentage: r.wavePercentages?.[w.index], total, succeeded, failed, skipped: skip, pending, phase };
  });
}

/** Failed sentinels with the reason each failed, from the waves' outcomes. */
export function failedOf(r: RolloutView): { id: string; reason?: string }[] {
  const reasons = new Map<string, string | undefined>();
  for (const w of r.waves ?? []) for (const s of w.sentinels) if (s.status === 'FAILED') reasons.set(s.id, s.reason);
  return (r.failedIds ?? []).map((id) => ({ id, reason: reasons.get(id) }));
}

/** Parses "1, 5, 25, 50, 100" into numbers; undefined for an empty field (the API's default). */
export function parseWaves(text: string): number[] | undefined {
  const t = text.trim();
  if (!t) return undefined;
  return t.split(/[\s,]+/).filter(Boolean).map(Number);
}
