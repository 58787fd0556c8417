// The fleet rollout as the page shows it: per-wave progress and which actions the API accepts
// in each state (the same rules as src/http/api/rollouts.ts, which answers 409 otherwise).
import type { RolloutView, RolloutWave } from '../../../cli/api.gen';

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

/** A wave's counts as the API gives them, and where the page says it stands. */
export interface WaveProgress extends RolloutWave {
  phase: 'done' | 'running' | 'waiting' | 'failed';
}

const noted = (r: RolloutView, ids: readonly string[] | undefined) => (ids ?? []).map((id) => ({ id, reason: r.notes?.[id]?.reason }));

/** Sentinels skipped in offline regions, with the reason (the first page the API lists). */
export const skippedOf = (r: RolloutView): { id: string; reason?: string }[] => noted(r, r.skippedIds);

/** Failed sentinels with the reason each failed (the first page the API lists). */
export const failedOf = (r: RolloutView): { id: string; reason?: string }[] => noted(r, r.failedIds);

export function waveProgress(r: RolloutView): WaveProgress[] {
  const current = r.currentWave ?? 0;
  return (r.waves ?? []).map((w) => {
    const phase: WaveProgress['phase'] =
      w.failed > 0 ? 'failed' : w.pending === 0 && w.total > 0 ? 'done' : w.index === current && r.state === 'in_progress' ? 'running' : w.index < current ? 'done' : 'waiting';
    return { index: w.index, percentage: w.percentage ?? r.wavePercentages?.[w.index], total: w.total, succeeded: w.succeeded, failed: w.failed, skipped: w.skipped, pending: w.pending, phase };
  });
}

/** Parses "1, 5, 25, 50, 100" into numbers; undefined for an empty field (the API's default). */
export function parseWaves(text: string): number[] | undefined {
  const t = text.trim();
  if (!t) return undefined;
  return t.split(/[\s,]+/).filter(Boolean).map(Number);
}
