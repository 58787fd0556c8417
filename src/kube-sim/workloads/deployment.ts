// The Deployment controller's decisions as pure functions: how many pods of the new template
// to create and which pods to delete in one reconcile (RollingUpdate with maxSurge and
// maxUnavailable, or Recreate), the rollout's progress against progressDeadlineSeconds, and
// the status with the conditions `kubectl rollout status` reads.
//
// Deliberate simplification: a Deployment owns its pods directly (no ReplicaSets); the
// ReplicaSet a real cluster would have is only named in condition messages.
import { intOrPercent } from './util';

export interface DeployPodView {
  name: string;
  /** Whether the pod runs the current template (pod-template-hash). */
  isNew: boolean;
  available: boolean;
  creationTimestamp: string;
}

export interface DeployPlanInput {
  desired: number;
  strategy: { type?: string; rollingUpdate?: { maxSurge?: unknown; maxUnavailable?: unknown } } | undefined;
  pods: DeployPodView[];
}

export interface DeployPlan {
  create: number;
  delete: string[];
}

/** The number of pods that must stay available during a rolling update. */
export function minAvailable(desired: number, strategy: DeployPlanInput['strategy']): { minAvailable: number; maxSurge: number } {
  const rolling = (strategy?.type ?? 'RollingUpdate') === 'RollingUpdate';
  const maxSurge = rolling ? intOrPercent(strategy?.rollingUpdate?.maxSurge ?? '25%', desired, true) : 0;
  let maxUnavailable = rolling ? intOrPercent(strategy?.rollingUpdate?.maxUnavailable ?? '25%', desired, false) : desired;
  if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  return { minAvailable: Math.max(0, desired - maxUnavailable), maxSurge };
}

/** Unavailable pods go first, then the newest. */
function byRemovalOrder(pods: DeployPodView[]): DeployPodView[] {
  return [...pods].sort((a, b) => Number(a.available) - Number(b.available) || b.creationTimestamp.localeCompare(a.creationTimestamp));
}

export function planDeployment(input: DeployPlanInput): DeployPlan {
  const { desired } = input;
  const newPods = input.pods.filter((p) => p.isNew);
  const oldPods = input.pods.filter((p) => !p.isNew);
  if ((input.strategy?.type ?? 'RollingUpdate') === 'Recreate') {
    if (oldPods.length > 0) return { create: 0, delete: oldPods.map((p) => p.name) };
    if (newPods.length < desired) return { create: desired - newPods.length, delete: [] };
    return { create: 0, delete: byRemovalOrder(newPods).slice(0, newPods.length - desired).map((p) => p.name) };
  }
  return planRolling(input, newPods, oldPods);
}

function planRolling(input: DeployPlanInput, newIn: DeployPodView[], oldIn: DeployPodView[]): DeployPlan {
  const { desired } = input;
  const { minAvailable: floor, maxSurge } = minAvailable(desired, input.strategy);
  const plan: DeployPlan = { create: 0, delete: [] };
  let newPods = newIn;
  let oldPods = oldIn;
  if (newPods.length > desired) {
    const drop = byRemovalOrder(newPods).slice(0, newPods.length - desired);
    plan.delete.push(...drop.map((p) => p.name));
    newPods = newPods.filter((p) => !drop.includes(p));
  } else {
    plan.create = Math.max(0, Math.min(desired - newPods.length, desired + maxSurge - (newPods.length + oldPods.length)));
  }
  // Old pods scale down without going under minAvailable (counting only available pods).
  const availableCount = [...newPods, ...oldPods].filter((p) => p.available).length;
  const newUnavailable = newPods.filter((p) => !p.available).length;
  const budget = Math.max(0, newPods.length + oldPods.length - floor - newUnavailable);
  const unhealthyOld = oldPods.filter((p) => !p.available).slice(0, budget);
  plan.delete.push(...unhealthyOld.map((p) => p.name));
  oldPods = oldPods.filter((p) => !unhealthyOld.includes(p));
  const healthyDown = Math.min(oldPods.length, Math.max(0, availableCount - floor));
  plan.delete.push(...byRemovalOrder(oldPods).slice(0, healthyDown).map((p) => p.name));
  return plan;
}

export interface Progress {
  /** Counts that changed last; any change of them is progress. */
  mark: string;
  at: number;
}

/** Whether the rollout stalled: no progress for the deadline while not complete. */
export function rolloutProgress(previous: Progress | undefined, mark: string, now: number, deadlineMs: number, complete: boolean): { progress: Progress; stalled: boolean; recheckInMs?: number } {
  const progress = previous && previous.mark === mark ? previous : { mark, at: now };
  const stalled = !complete && now - progress.at >= deadlineMs;
  return { progress, stalled, ...(!complete && !stalled ? { recheckInMs: Math.max(1, Math.ceil(progress.at + deadlineMs - now) + 1) } : {}) };
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

export interface DeployStatusInput {
  name: string;
  hash: string;
  generation: number | undefined;
  desired: number;
  minAvailable: number;
  pods: { isNew: boolean; ready: boolean; available: boolean }[];
  stalled: boolean;
  previousConditions: Condition[];
  now: string;
  /** Why the last pod create was refused (admission, quota), while it keeps being refused. */
  replicaFailure?: string;
}

export function deploymentComplete(desired: number, pods: DeployStatusInput['pods']): boolean {
  const updated = pods.filter((p) => p.isNew).length;
  const avail = pods.filter((p) => p.available).length;
  return updated === desired && avail === desired && pods.length === desired;
}

/** Status with Available and Progressing conditions as the deployment controller writes them. */
export function deploymentStatus(input: DeployStatusInput): Record<string, unknown> {
  const { pods, desired, now } = input;
  const updated = pods.filter((p) => p.isNew).length;
  const avail = pods.filter((p) => p.available).length;
  const complete = deploymentComplete(desired, pods);
  const cond = (type: string, ok: boolean, reason: string, message: string): Condition => {
    const prev = input.previousConditions.find((c) => c.type === type);
    const status = ok ? 'True' : 'False';
    const same = prev && prev.status === status && prev.reason === reason;
    const kept = prev && prev.status === status;
    return { type, status, lastUpdateTime: same ? (prev.lastUpdateTime ?? now) : now, lastTransitionTime: kept ? (prev.lastTransitionTime ?? now) : now, reason, message };
  };
  const rs = `ReplicaSet "${input.name}-${input.hash}"`;
  const okAvail = avail >= input.minAvailable;
  const conditions = [
    cond('Available', okAvail, okAvail ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable', okAvail ? 'Deployment has minimum availability.' : 'Deployment does not have minimum availability.'),
    input.stalled
      ? cond('Progressing', false, 'ProgressDeadlineExceeded', `${rs} has timed out progressing.`)
      : cond('Progressing', true, complete ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated', complete ? `${rs} has successfully progressed.` : `${rs} is progressing.`),
  ];
  // The ReplicaSet's ReplicaFailure, which the deployment controller copies while it lasts.
  if (input.replicaFailure) conditions.push(cond('ReplicaFailure', true, 'FailedCreate', input.replicaFailure));
  const status: Record<string, unknown> = {
    observedGeneration: input.generation,
    replicas: pods.length,
    updatedReplicas: updated,
    readyReplicas: pods.filter((p) => p.ready).length,
    availableReplicas: avail,
    conditions,
  };
  const unavailable = Math.max(0, Math.max(desired, pods.length) - avail);
  if (unavailable > 0) status.unavailableReplicas = unavailable;
  return status;
}
