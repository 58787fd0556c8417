// Sentinel Deployment (+ its pods' states) → the observed fields ctrl stores, a pure function.
// runningImage only names an image once the rollout to it is complete (every replica updated
// and available, no old replicas left): the sentinel deploy call waits for exactly that.
import type { V1Deployment } from '@kubernetes/client-node';
import type { SentinelStatus } from '../../sync/wire';
import { ANNOTATION, LABEL, SENTINEL_CONTAINER } from '../manifests';

export function rolloutComplete(d: V1Deployment): boolean {
  const want = d.spec?.replicas ?? 1;
  const st = d.status ?? {};
  return (
    (st.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) &&
    (st.updatedReplicas ?? 0) >= want &&
    (st.replicas ?? 0) <= (st.updatedReplicas ?? 0) &&
    (st.availableReplicas ?? 0) >= want
  );
}

export function sentinelImage(d: V1Deployment): string | null {
  const cs = d.spec?.template?.spec?.containers ?? [];
  return (cs.find((c) => c.name === SENTINEL_CONTAINER) ?? cs[0])?.image ?? null;
}

/**
 * `previousImage` is the last image seen fully rolled out (kept by the caller), reported while a
 * rollout is in flight. `failingPods` counts the sentinel's pods in a failed state.
 */
export function sentinelStatus(d: V1Deployment, previousImage: string | null, failingPods: number): SentinelStatus | undefined {
  const sentinelId = d.metadata?.labels?.[LABEL.sentinelId];
  if (!sentinelId) return undefined;
  const want = d.spec?.replicas ?? 1;
  const st = d.status ?? {};
  const complete = rolloutComplete(d);
  const stalled = st.conditions?.some((c) => c.type === 'Progressing' && c.status === 'False') ?? false;
  let health: SentinelStatus['health'];
  if (failingPods > 0 || stalled) health = 'unhealthy';
  else if (want === 0) health = 'unknown';
  else health = complete ? 'healthy' : 'unknown';
  return {
    sentinelId,
    availableReplicas: st.availableReplicas ?? 0,
    updatedReplicas: st.updatedReplicas ?? 0,
    readyReplicas: st.readyReplicas ?? 0,
    observedGeneration: st.observedGeneration ?? 0,
    runningImage: want === 0 ? null : complete ? sentinelImage(d) : previousImage,
    health,
    // Only a finished rollout speaks for a spec: mid-rollout the counts mix old and new pods.
    specHash: complete ? (d.metadata?.annotations?.[ANNOTATION.specHash] ?? null) : null,
  };
}
