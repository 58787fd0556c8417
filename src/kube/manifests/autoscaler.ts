// An autoscaled deployment in one region → an autoscaling/v2 HorizontalPodAutoscaler for its
// StatefulSet (issue 25, seed 001's AutoScaling). With one, the StatefulSet's manifest carries
// no spec.replicas (deployment.ts), so krane's server-side apply never owns the field: the
// autoscaler's writes through /scale are not drift and krane never fights them.
import { refKey, type DeploymentApply } from '../../sync/wire';
import { ANNOTATION, deploymentLabels } from './labels';
import { deploymentObjectName } from './names';
import type { ManifestObject } from './types';

/**
 * How long the autoscaler waits before acting on a lower recommendation (the highest one of
 * this window wins). Kubernetes' default is 300 s; a shorter one lets a quiet deployment give
 * its pods back in minutes rather than after every short lull, and 60 s still rides out a
 * dip between two bursts.
 */
export const SCALE_DOWN_STABILIZATION_SECONDS = 60;

export function buildAutoscaler(s: DeploymentApply & { autoscaling: NonNullable<DeploymentApply['autoscaling']> }): ManifestObject {
  const name = deploymentObjectName(s.deploymentId);
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: {
      name,
      namespace: s.namespace,
      labels: deploymentLabels(s),
      annotations: { [ANNOTATION.resource]: refKey({ type: 'deployment_topology', id: s.deploymentId }), [ANNOTATION.region]: s.region },
    },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name },
      minReplicas: s.autoscaling.minReplicas,
      maxReplicas: s.autoscaling.maxReplicas,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: s.autoscaling.cpuUtilization } } }],
      behavior: { scaleDown: { stabilizationWindowSeconds: SCALE_DOWN_STABILIZATION_SECONDS } },
    },
  };
}
