// The disruption controller's status for a PodDisruptionBudget, as a pure function of the
// budget's spec and the readiness of the pods its selector takes.
import { intOrPercent } from './util';

export interface PdbInput {
  spec: { minAvailable?: unknown; maxUnavailable?: unknown } | undefined;
  generation: number | undefined;
  /** Readiness of every pod the selector takes. */
  pods: { ready: boolean }[];
  previousCondition: { status?: string; lastTransitionTime?: string } | undefined;
  now: string;
}

export function pdbStatus(input: PdbInput): Record<string, unknown> {
  const healthy = input.pods.filter((p) => p.ready).length;
  const expected = input.pods.length;
  let desiredHealthy = 0;
  if (input.spec?.minAvailable !== undefined) desiredHealthy = intOrPercent(input.spec.minAvailable, expected, true);
  else if (input.spec?.maxUnavailable !== undefined) desiredHealthy = Math.max(0, expected - intOrPercent(input.spec.maxUnavailable, expected, true));
  const allowed = Math.max(0, healthy - desiredHealthy);
  const condStatus = allowed > 0 ? 'True' : 'False';
  const prev = input.previousCondition;
  return {
    observedGeneration: input.generation,
    currentHealthy: healthy,
    desiredHealthy,
    disruptionsAllowed: allowed,
    expectedPods: expected,
    conditions: [
      {
        type: 'DisruptionAllowed',
        status: condStatus,
        reason: allowed > 0 ? 'SufficientPods' : 'InsufficientPods',
        message: '',
        observedGeneration: input.generation,
        lastTransitionTime: prev && prev.status === condStatus ? prev.lastTransitionTime : input.now,
      },
    ],
  };
}
