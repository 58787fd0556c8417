// Watches sentinel Deployments and their pods (label-scoped) and reports each sentinel's
// observed fields when they change, and all of them after every full relist. Pods matter for
// health: a rollout whose new pod crash-loops leaves the Deployment "progressing" for minutes,
// while the pod says at once that it is failing. Only the leader reports (isLeader): its reports
// carry the order of its leadership (src/sync/reporter.ts), and a standby's view, stale or not,
// has no place in it; a new leader reports every sentinel at once (reportAll).
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log';
import type { SentinelStatus } from '../../sync/wire';
import { KINDS, type KubeClient } from '../client';
import { LABEL, MANAGED_SELECTOR } from '../manifests';
import { Reflector } from '../reflector';
import { podState } from './pod';
import { rolloutComplete, sentinelImage, sentinelStatus } from './sentinel';
import type { StatusSink } from '../../sync/wire';

export interface SentinelWatcherOptions {
  api: KubeClient;
  namespace: string;
  sink: StatusSink;
  logger: Logger;
  relistIntervalMs: number;
  minBackoffMs?: number;
  /** Whether this krane leads (reports only then); absent: it always does (no leader election). */
  isLeader?: () => boolean;
}

export class SentinelStatusWatcher {
  readonly deployments: Reflector;
  readonly pods: Reflector;
  private readonly last = new Map<string, string>();
  /** Last image each sentinel was seen fully rolled out on; reported while a rollout runs. */
  private readonly lastImage = new Map<string, string>();
  /** Failed pods per sentinel id (pod key → sentinel id). */
  private readonly failing = new Map<string, string>();

  constructor(private readonly o: SentinelWatcherOptions) {
    const selector = `${MANAGED_SELECTOR},${LABEL.component}=sentinel`;
    const common = { api: o.api, namespace: o.namespace, labelSelector: selector, logger: o.logger, relistIntervalMs: o.relistIntervalMs, minBackoffMs: o.minBackoffMs };
    this.deployments = new Reflector({
      ...common,
      apiVersion: KINDS.Deployment.apiVersion,
      kind: 'Deployment',
      plural: KINDS.Deployment.plural,
      onEvent: (type, obj, relist) => this.onDeployment(type, obj as V1Deployment, relist),
    });
    this.pods = new Reflector({
      ...common,
      apiVersion: KINDS.Pod.apiVersion,
      kind: 'Pod',
      plural: KINDS.Pod.plural,
      onEvent: (type, obj) => this.onPod(type, obj as V1Pod),
    });
  }

  start(): void {
    this.deployments.start();
    this.pods.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.deployments.stop(), this.pods.stop()]);
  }

  private onPod(type: 'upsert' | 'delete', pod: V1Pod): void {
    const id = pod.metadata?.labels?.[LABEL.sentinelId];
    if (!id) return;
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    const wasFailing = this.failing.has(key);
    const isFailing = type === 'upsert' && podState(pod).status === 'failed';
    if (isFailing) this.failing.set(key, id);
    else this.failing.delete(key);
    if (wasFailing !== isFailing) this.refresh(id, false);
  }

  /** Reports every sentinel as seen now (a new leader's first word on them). */
  reportAll(): void {
    for (const d of this.deployments.store.values()) this.emit(d as V1Deployment, true);
  }

  private get leading(): boolean {
    return this.o.isLeader?.() ?? true;
  }

  private onDeployment(type: 'upsert' | 'delete', d: V1Deployment, relist: boolean): void {
    const id = d.metadata?.labels?.[LABEL.sentinelId];
    if (!id) return;
    if (type === 'delete') {
      // The sentinel's objects are gone: nothing runs, and a later re-create starts from scratch.
      this.lastImage.delete(id);
      this.last.delete(id);
      if (this.leading) this.o.sink.sentinel({ sentinelId: id, availableReplicas: 0, updatedReplicas: 0, readyReplicas: 0, observedGeneration: 0, runningImage: null, health: 'unknown', specHash: null });
      return;
    }
    this.emit(d, relist);
  }

  private refresh(id: string, force: boolean): void {
    for (const d of this.deployments.store.values()) {
      if ((d.metadata?.labels ?? {})[LABEL.sentinelId] === id) this.emit(d as V1Deployment, force);
    }
  }

  private emit(d: V1Deployment, force: boolean): void {
    const id = d.metadata!.labels![LABEL.sentinelId]!;
    if (rolloutComplete(d)) {
      const img = sentinelImage(d);
      if (img) this.lastImage.set(id, img);
    }
    let failingPods = 0;
    for (const sid of this.failing.values()) if (sid === id) failingPods++;
    const s: SentinelStatus | undefined = sentinelStatus(d, this.lastImage.get(id) ?? null, failingPods);
    if (!s) return;
    const text = JSON.stringify(s);
    const unchanged = this.last.get(id) === text;
    this.o.logger.debug({ ...s, force, unchanged }, 'sentinel observed');
    // A standby keeps no `last`: when it leads, reportAll sends everything anyway.
    if ((!force && unchanged) || !this.leading) return;
    this.last.set(id, text);
    this.o.sink.sentinel(s);
  }
}
