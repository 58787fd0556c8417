// Watches deployment pods (label-scoped to krane's own) and reports each pod's instance state
// when it changes, a deleted report when the pod goes, and everything again after every full
// relist so ctrl heals from anything it lost.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log';
import type { InstanceReport } from '../../sync/wire';
import { KINDS, type KubeClient } from '../client';
import { LABEL, MANAGED_SELECTOR } from '../manifests';
import { Reflector } from '../reflector';
import { instanceReport } from './pod';
import type { StatusSink } from '../../sync/wire';

export interface InstanceWatcherOptions {
  api: KubeClient;
  namespace: string;
  sink: StatusSink;
  logger: Logger;
  relistIntervalMs: number;
  minBackoffMs?: number;
}

export class InstanceStatusWatcher {
  readonly reflector: Reflector;
  private readonly last = new Map<string, string>();

  constructor(private readonly o: InstanceWatcherOptions) {
    this.reflector = new Reflector({
      api: o.api,
      apiVersion: KINDS.Pod.apiVersion,
      kind: 'Pod',
      plural: KINDS.Pod.plural,
      namespace: o.namespace,
      labelSelector: `${MANAGED_SELECTOR},${LABEL.component}=deployment`,
      logger: o.logger,
      relistIntervalMs: o.relistIntervalMs,
      minBackoffMs: o.minBackoffMs,
      onEvent: (type, obj, relist) => this.onEvent(type, obj as V1Pod, relist),
    });
  }

  start(): void {
    this.reflector.start();
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }

  private onEvent(type: 'upsert' | 'delete', pod: V1Pod, relist: boolean): void {
    const r = instanceReport(pod, type === 'delete');
    if (!r) return;
    const key = `${r.deploymentId}/${r.podName}`;
    const text = JSON.stringify(r);
    if (type === 'delete') this.last.delete(key);
    else if (!relist && this.last.get(key) === text) return;
    else this.last.set(key, text);
    this.emit(r);
  }

  private emit(r: InstanceReport): void {
    this.o.sink.instance(r);
  }
}
