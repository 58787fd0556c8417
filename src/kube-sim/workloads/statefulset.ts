// The StatefulSet controller's decisions as pure functions: which ordinals to create and which
// pods to delete for one reconcile, and the status that follows from the pods. Data in, data
// out; the controller (controller.ts) gathers the views and performs the writes.
//
// Deliberate simplification: a rolling update replaces an outdated pod that is not Ready at
// once (a real cluster waits forever on a broken pod, which helps nobody in a simulator).

export interface StsPodView {
  name: string;
  ordinal: number;
  ready: boolean;
  /** controller-revision-hash label of the pod. */
  revision: string | undefined;
}

export interface StsPlanInput {
  replicas: number;
  /** podManagementPolicy Parallel: no waiting for lower ordinals. */
  parallel: boolean;
  rollingUpdate: boolean;
  partition: number;
  updateRevision: string;
  pods: StsPodView[];
}

export interface StsPlan {
  create: number[];
  delete: string[];
}

/** One reconcile step: scale down (highest first), scale up (lowest missing), then roll. */
export function planStatefulSet(input: StsPlanInput): StsPlan {
  const { replicas, parallel } = input;
  const byOrdinal = new Map<number, StsPodView>(input.pods.map((p) => [p.ordinal, p]));
  const plan: StsPlan = { create: [], delete: [] };
  const remove = (i: number) => {
    plan.delete.push(byOrdinal.get(i)!.name);
    byOrdinal.delete(i);
  };
  // Scale down: highest ordinals first; the ordered policy removes one at a time.
  const extra = [...byOrdinal.keys()].filter((i) => i >= replicas).sort((a, b) => b - a);
  for (const i of parallel ? extra : extra.slice(0, 1)) remove(i);
  // Scale up: the ordered policy creates the lowest missing ordinal once all before it are Ready.
  if (extra.length === 0 || parallel) {
    for (let i = 0; i < replicas; i++) {
      const p = byOrdinal.get(i);
      if (p) {
        if (!parallel && !p.ready) break;
        continue;
      }
      plan.create.push(i);
      if (!parallel) break;
    }
  }
  if (input.rollingUpdate) planRoll(input, byOrdinal, remove);
  return plan;
}

/** Rolling update, highest ordinal first: broken outdated pods go at once, healthy ones one at
 *  a time once every pod is Ready. */
function planRoll(input: StsPlanInput, byOrdinal: Map<number, StsPodView>, remove: (i: number) => void): void {
  const { replicas, partition, updateRevision } = input;
  const outdated = [...byOrdinal.entries()]
    .filter(([i, p]) => i < replicas && i >= partition && p.revision !== updateRevision)
    .sort((a, b) => b[0] - a[0]);
  const broken = outdated.filter(([, p]) => !p.ready);
  for (const [i] of broken) remove(i);
  const inRange = [...byOrdinal.entries()].filter(([i]) => i < replicas);
  const allReady = inRange.every(([, p]) => p.ready) && byOrdinal.size >= replicas;
  if (broken.length === 0 && outdated.length > 0 && allReady) remove(outdated[0]![0]);
}

export interface StsStatusInput {
  generation: number | undefined;
  replicas: number;
  updateRevision: string;
  previousCurrentRevision: string | undefined;
  pods: { ready: boolean; available: boolean; revision: string | undefined }[];
}

/** The status kubectl rollout status and krane read: counts per revision and both revisions. */
export function statefulSetStatus(input: StsStatusInput): Record<string, unknown> {
  const { pods, updateRevision } = input;
  const updated = pods.filter((p) => p.revision === updateRevision).length;
  const done = updated === input.replicas && pods.length === input.replicas;
  const currentRevision = done ? updateRevision : (input.previousCurrentRevision ?? updateRevision);
  return {
    observedGeneration: input.generation,
    replicas: pods.length,
    readyReplicas: pods.filter((p) => p.ready).length,
    currentReplicas: pods.filter((p) => p.revision === currentRevision).length,
    updatedReplicas: updated,
    availableReplicas: pods.filter((p) => p.available).length,
    currentRevision,
    updateRevision,
    collisionCount: 0,
  };
}
