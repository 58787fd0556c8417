// Watches deployment pods (label-scoped to krane's own) and reports each pod's instance state
// when it changes, a deleted report when the pod goes, everything again after every full
// relist so ctrl heals from anything it lost, and a deployment's pods again on request (after
// krane applied its topology). After every full list (and when this replica becomes the
// leader) it also reports the complete set of the region's pods, so ctrl drops rows of pods
// that went while no report could say so (a krane killed with a delete report still buffered,
// issue 23). Only the leader sends the set: a standby's list may be older than the leader's
// latest report, and its set would take that pod's row away until the next report.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log';
import { MAX_INSTANCE_SET, type InstanceRef, type InstanceReport } from '../../sync/wire';
import { KINDS, type KubeClient } from '../client';
import { LABEL, MANAGED_SELECTOR } from '../manifests';
import { Reflector } from '../reflector';
import { instanceReport, podStartup } from './pod';
import type { StatusSink } from '../../sync/wire';

export interface InstanceWatcherOptions {
  api: KubeClient;
  namespace: string;
  sink: StatusSink;
  logger: Logger;
  relistIntervalMs: number;
  minBackoffMs?: number;
  /** Called once per pod that became running while this watcher ran, with its startup time. */
  onStartup?: (seconds: number) => void;
  /** Whether this replica leads (sends the complete set); absent: it always does. */
  isLeader?: () => boolean;
  /** The uid of the deployment's StatefulSet as krane knows it (ApplyController#workloadOwner):
   *  null when there is none, undefined when krane does not know yet. */
  currentOwner?: (deploymentId: string) => string | null | undefined;
  /** The deployment's desired-state generation krane last applied, stamped on each report:
   *  ctrl counts a restarted deployment's pods only from reports made under its generation. */
  appliedGeneration?: (deploymentId: string) => number | undefined;
}

/**
 * Ready transitions are stamped in whole seconds by real API servers, so one up to this much
 * before the watcher started may still be one it saw happen.
 */
const STARTUP_SLACK_MS = 1_000;

export class InstanceStatusWatcher {
  readonly reflector: Reflector;
  private readonly last = new Map<string, string>();
  /** The latest pod objects by deployment, so a resend touches one deployment's pods only:
   *  krane resends after every topology apply, and a full sync applies every deployment. */
  private readonly byDeployment = new Map<string, Map<string, V1Pod>>();
  /** Pods whose startup was observed (or is too old to count), so each counts once. */
  private readonly started = new Set<string>();
  private readonly since = Date.now();

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
      onSynced: () => this.reportSet(),
    });
  }

  start(): void {
    this.reflector.start();
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }

  private onEvent(type: 'upsert' | 'delete', pod: V1Pod, relist: boolean): void {
    const r = this.report(pod, type === 'delete');
    if (!r) return;
    const key = `${r.deploymentId}/${r.podName}`;
    this.index(r.deploymentId, r.podName, type === 'delete' ? undefined : pod);
    this.observeStartup(pod, type === 'delete');
    const text = JSON.stringify(r);
    if (type === 'delete') this.last.delete(key);
    else if (!relist && this.last.get(key) === text) return;
    else this.last.set(key, text);
    this.emit(r);
  }

  /** A pod that was already running when krane started is not counted: its startup was seen
   *  (and counted) by the krane before, or by nobody, and a relist must not count it again. */
  private observeStartup(pod: V1Pod, deleted: boolean): void {
    const uid = pod.metadata?.uid ?? `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    if (deleted) {
      this.started.delete(uid);
      return;
    }
    if (!this.o.onStartup || this.started.has(uid)) return;
    const s = podStartup(pod);
    if (!s) return;
    this.started.add(uid);
    if (s.readyAt >= this.since - STARTUP_SLACK_MS) this.o.onStartup(s.seconds);
  }

  /**
   * Reports the pods of one deployment again, changed or not. krane calls it after applying
   * the deployment's topology: ctrl counts only reports newer than the topology's last change
   * (deploymentProgress), and a pod that outlived a stop and start would otherwise not be
   * reported again before the next relist.
   *
   * Only pods whose controller is one of `owners` (the StatefulSet just applied): after a stop
   * deleted the StatefulSet and a start made a new one, this cache still holds the old one's
   * pods as running until their deletion is watched, and resending them told ctrl, as news, that
   * pods on their way out were running; a restarted deployment took all traffic with none ready
   * (the model test found it). A pod that outlived the stop keeps its owner and is resent.
   */
  resend(deploymentId: string, owners: ReadonlySet<string>): void {
    for (const pod of this.byDeployment.get(deploymentId)?.values() ?? []) {
      const owner = ownerOf(pod);
      const r = this.report(pod);
      if (!r) continue;
      // Not news; but its next event (an adoption changes only ownerReferences) must go out.
      if (!owner || !owners.has(owner)) {
        this.last.delete(`${r.deploymentId}/${r.podName}`);
        continue;
      }
      this.last.set(`${r.deploymentId}/${r.podName}`, JSON.stringify(r));
      this.emit(r);
    }
  }

  /**
   * Reports every pod this watcher knows (its last full list and the watch events since) as the
   * region's complete set; a no-op on a standby, before the first list, or past MAX_INSTANCE_SET.
   */
  reportSet(): void {
    if (!this.reflector.hasSynced || !(this.o.isLeader?.() ?? true) || !this.o.sink.instanceSet) return;
    const pods: InstanceRef[] = [];
    for (const [deploymentId, byName] of this.byDeployment) for (const podName of byName.keys()) pods.push({ deploymentId, podName });
    if (pods.length > MAX_INSTANCE_SET) {
      this.o.logger.warn({ pods: pods.length, max: MAX_INSTANCE_SET }, 'too many pods for a complete instance set, not sent');
      return;
    }
    this.o.sink.instanceSet(pods);
  }

  /**
   * A pod's report, with one thing the pod cannot say of itself: a pod whose StatefulSet is not
   * the deployment's current one (a stop deleted it and a start made a new one of the same
   * name) is on its way out, whatever its status still says, so it is `pending`, never running.
   * Its name is the new pod's too, so ctrl could not tell the two apart (the model test found a
   * restarted deployment given all traffic on such a pod).
   */
  private report(pod: V1Pod, deleted = false): InstanceReport | undefined {
    const observed = instanceReport(pod, deleted);
    const generation = observed && this.o.appliedGeneration?.(observed.deploymentId);
    const r = observed && generation !== undefined ? { ...observed, generation } : observed;
    if (!r || deleted || r.status === 'pending') return r;
    const current = this.o.currentOwner?.(r.deploymentId);
    if (current === undefined || current === ownerOf(pod)) return r;
    return { ...r, status: 'pending', reason: 'Replaced: not a pod of the current StatefulSet' };
  }

  private index(deploymentId: string, podName: string, pod: V1Pod | undefined): void {
    let pods = this.byDeployment.get(deploymentId);
    if (pod) {
      if (!pods) this.byDeployment.set(deploymentId, (pods = new Map()));
      pods.set(podName, pod);
    } else if (pods) {
      pods.delete(podName);
      if (pods.size === 0) this.byDeployment.delete(deploymentId);
    }
  }

  private emit(r: InstanceReport): void {
    this.o.sink.instance(r);
  }
}

const ownerOf = (pod: V1Pod) => pod.metadata?.ownerReferences?.find((o) => o.controller)?.uid;
