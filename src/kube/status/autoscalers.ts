// Watches the HorizontalPodAutoscalers of autoscaled deployments (label-scoped to krane's own)
// and reports each one's bounds, current and desired replicas and CPU utilisation when they
// change, and a deleted report when it goes (issue 25). Like the pod watcher, it re-emits
// everything after each full relist, so ctrl heals from anything it lost.
import type { Logger } from '../../log';
import type { AutoscalerStatus, StatusSink } from '../../sync/wire';
import { KINDS, type KubeClient } from '../client';
import { LABEL, MANAGED_SELECTOR } from '../manifests';
import { Reflector } from '../reflector';

export interface AutoscalerWatcherOptions {
  api: KubeClient;
  namespace: string;
  sink: StatusSink;
  logger: Logger;
  relistIntervalMs: number;
  minBackoffMs?: number;
}

interface Hpa {
  metadata?: { labels?: Record<string, string> };
  spec?: { minReplicas?: number; maxReplicas?: number };
  status?: { currentReplicas?: number; desiredReplicas?: number; currentMetrics?: { resource?: { name?: string; current?: { averageUtilization?: number } } }[] };
}

/** An HPA as ctrl stores it; undefined for one without a deployment id label. */
export function autoscalerStatus(hpa: Hpa, deleted = false): AutoscalerStatus | undefined {
  const deploymentId = hpa.metadata?.labels?.[LABEL.deploymentId];
  if (!deploymentId) return undefined;
  const cpu = hpa.status?.currentMetrics?.find((m) => m.resource?.name === 'cpu')?.resource?.current?.averageUtilization;
  return {
    deploymentId,
    minReplicas: hpa.spec?.minReplicas ?? 1,
    maxReplicas: hpa.spec?.maxReplicas ?? 1,
    currentReplicas: hpa.status?.currentReplicas ?? null,
    desiredReplicas: hpa.status?.desiredReplicas ?? null,
    cpuUtilization: cpu ?? null,
    deleted,
  };
}

export class AutoscalerStatusWatcher {
  readonly reflector: Reflector;
  private readonly last = new Map<string, string>();

  constructor(private readonly o: AutoscalerWatcherOptions) {
    this.reflector = new Reflector({
      api: o.api,
      apiVersion: KINDS.HorizontalPodAutoscaler.apiVersion,
      kind: 'HorizontalPodAutoscaler',
      plural: KINDS.HorizontalPodAutoscaler.plural,
      namespace: o.namespace,
      labelSelector: `${MANAGED_SELECTOR},${LABEL.component}=deployment`,
      logger: o.logger,
      relistIntervalMs: o.relistIntervalMs,
      minBackoffMs: o.minBackoffMs,
      onEvent: (type, obj, relist) => this.onEvent(type, obj as Hpa, relist),
    });
  }

  start(): void {
    this.reflector.start();
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }

  private onEvent(type: 'upsert' | 'delete', hpa: Hpa, relist: boolean): void {
    const s = autoscalerStatus(hpa, type === 'delete');
    if (!s) return;
    const text = JSON.stringify(s);
    if (type === 'delete') this.last.delete(s.deploymentId);
    else if (!relist && this.last.get(s.deploymentId) === text) return;
    else this.last.set(s.deploymentId, text);
    this.o.sink.autoscaler?.(s);
  }
}
