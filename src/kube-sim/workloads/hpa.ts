// The horizontal pod autoscaler controller (autoscaling/v2, CPU utilisation only), with the
// algorithm of Kubernetes' own: every sync it averages the CPU of the target's Ready pods as a
// share of their requests, and
//
//   desired = ceil(readyPods × utilisation / target)        (unchanged within ±10%: tolerance)
//
// clamped to [minReplicas, maxReplicas]. Scaling up acts at once; scaling down takes the
// highest recommendation of the stabilisation window (spec.behavior.scaleDown, 300 s by
// default), so a short lull does not give pods back. The new count goes through the target's
// /scale subresource under the controller's field manager, as in a cluster, so a server-side
// apply that leaves spec.replicas out (krane's) keeps it.
//
// CPU is simulated from each pod's image, so tests choose the load by tag: `cpuhot` runs at 95%
// of its request, `cpucold` at 5%, anything else at 30%. setLoad overrides a workload's load
// (traffic that comes and goes) without touching its pods.
//
// Deliberate simplifications: no scale-up rate limits (behavior.scaleUp policies), pods not
// Ready are left out of the average instead of being assumed idle, CPU is the only metric.
import type { Logger } from '../../log';
import { mustResourceForKind, resourceForKind } from '../resources';
import type { ObjectStore } from '../object-store';
import type { SimApi } from '../sim-api';
import type { KubeObject } from '../types';
import { selectorMatches } from '../validate';
import type { EventRecorder } from './events';
import { isPodReady } from './pod-status';
import { controllerOf, nowIso } from './util';

export interface HpaOptions {
  /** How often every autoscaler is evaluated (the kube-controller-manager's 15 s by default). */
  syncMs: number;
  /** Multiplies stabilisation windows (1 = real seconds); tests shorten them. */
  stabilizationScale: number;
}

/** Kubernetes' --horizontal-pod-autoscaler-tolerance: within 10% of the target, nothing moves. */
export const HPA_TOLERANCE = 0.1;
/** Kubernetes' default scale-down stabilisation window, in seconds. */
export const DEFAULT_SCALE_DOWN_WINDOW_S = 300;

/** Simulated CPU use as a share of the request, by image tag. */
export function simulatedCpuLoad(image: string | undefined): number {
  const tag = image ?? '';
  if (tag.includes('cpuhot')) return 0.95;
  if (tag.includes('cpucold')) return 0.05;
  return 0.3;
}

/** The raw recommendation: ceil(ready × utilisation / target), or `current` within tolerance. */
export function recommendReplicas(a: { current: number; ready: number; utilization: number | undefined; target: number }): number {
  if (a.utilization === undefined || a.ready === 0) return a.current;
  const ratio = a.utilization / a.target;
  if (Math.abs(ratio - 1) <= HPA_TOLERANCE) return a.current;
  return Math.ceil(a.ready * ratio);
}

/** Up at once; down only to the highest recommendation still inside the window; then the bounds. */
export function stabilize(a: { current: number; recommendation: number; window: readonly number[]; min: number; max: number }): number {
  const down = a.recommendation < a.current ? Math.min(a.current, Math.max(a.recommendation, ...a.window)) : a.recommendation;
  return Math.min(a.max, Math.max(a.min, down));
}

const HPA = mustResourceForKind('autoscaling/v2', 'HorizontalPodAutoscaler');
const POD = mustResourceForKind('v1', 'Pod');
const MANAGER = 'kube-controller-manager';

const millicores = (q: unknown): number => {
  const s = String(q ?? '0');
  return s.endsWith('m') ? Number(s.slice(0, -1)) : Number(s) * 1000;
};

export class HpaController {
  private readonly timer: NodeJS.Timeout;
  /** Per autoscaler uid: its recommendations with their times, for the stabilisation window. */
  private readonly history = new Map<string, { at: number; replicas: number }[]>();
  /** Load overrides by `namespace/workload name`. */
  private readonly loads = new Map<string, number>();

  constructor(
    private readonly api: SimApi,
    private readonly store: ObjectStore,
    private readonly events: EventRecorder,
    private readonly opts: HpaOptions,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(() => this.syncNow(), opts.syncMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Sets (or with undefined clears) the simulated CPU load of a workload's pods. */
  setLoad(namespace: string, workload: string, load: number | undefined): void {
    if (load === undefined) this.loads.delete(`${namespace}/${workload}`);
    else this.loads.set(`${namespace}/${workload}`, load);
  }

  /** One sync of every autoscaler now, as the timer does (tests drive the autoscaler with it). */
  syncNow(): void {
    const live = new Set<string>();
    for (const hpa of this.store.list(HPA, undefined)) {
      live.add(hpa.metadata.uid!);
      try {
        this.sync(hpa);
      } catch (err) {
        this.logger.error({ err, name: hpa.metadata.name, namespace: hpa.metadata.namespace }, 'kube-sim autoscaler sync failed');
      }
    }
    for (const uid of this.history.keys()) if (!live.has(uid)) this.history.delete(uid);
  }

  private podLoad(pod: KubeObject): { used: number; requested: number } {
    const owner = controllerOf(pod);
    const override = owner ? this.loads.get(`${pod.metadata.namespace}/${owner.name}`) : undefined;
    let used = 0;
    let requested = 0;
    for (const c of pod.spec?.containers ?? []) {
      const req = millicores(c.resources?.requests?.cpu ?? c.resources?.limits?.cpu);
      requested += req;
      used += req * (override ?? simulatedCpuLoad(c.image));
    }
    return { used, requested };
  }

  private sync(hpa: KubeObject): void {
    const ns = hpa.metadata.namespace ?? '';
    const ref = hpa.spec?.scaleTargetRef ?? {};
    const def = resourceForKind(ref.apiVersion ?? '', ref.kind ?? '');
    const target = def?.scalable ? this.store.get(def, ns, ref.name) : undefined;
    if (!def || !target) {
      this.api.setStatus(HPA, ns, hpa.metadata.name!, { ...hpa.status, conditions: [condition('AbleToScale', false, 'FailedGetScale', `the HPA controller was unable to get the target's current scale: ${ref.kind}/${ref.name} not found`)] });
      return;
    }
    const current: number = target.spec?.replicas ?? 1;
    const cpuTarget: number = (hpa.spec?.metrics ?? []).find((m: any) => m.type === 'Resource' && m.resource?.name === 'cpu')?.resource?.target?.averageUtilization ?? 80;
    const pods = [...this.store.values(POD, ns)].filter((p) => selectorMatches(target.spec?.selector ?? {}, p.metadata.labels ?? {}) && isPodReady(p));
    const sum = pods.map((p) => this.podLoad(p)).reduce((a, b) => ({ used: a.used + b.used, requested: a.requested + b.requested }), { used: 0, requested: 0 });
    const utilization = sum.requested > 0 ? Math.round((sum.used / sum.requested) * 100) : undefined;
    const min: number = hpa.spec?.minReplicas ?? 1;
    const max: number = hpa.spec?.maxReplicas ?? min;
    // replicas 0 turns autoscaling off, as in a cluster.
    const recommendation = current === 0 ? 0 : recommendReplicas({ current, ready: pods.length, utilization, target: cpuTarget });
    const windowMs = (hpa.spec?.behavior?.scaleDown?.stabilizationWindowSeconds ?? DEFAULT_SCALE_DOWN_WINDOW_S) * 1000 * this.opts.stabilizationScale;
    const now = Date.now();
    const history = (this.history.get(hpa.metadata.uid!) ?? []).filter((h) => now - h.at < windowMs);
    const desired = current === 0 ? 0 : stabilize({ current, recommendation, window: history.map((h) => h.replicas), min, max });
    history.push({ at: now, replicas: recommendation });
    this.history.set(hpa.metadata.uid!, history);
    let lastScaleTime = hpa.status?.lastScaleTime;
    if (desired !== current) {
      this.api.writeScale(def, ns, ref.name, { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: { name: ref.name, namespace: ns }, spec: { replicas: desired } }, { fieldManager: MANAGER });
      const why = utilization === undefined ? 'outside the bounds' : `cpu resource utilization (percentage of request) ${desired > current ? 'above' : 'below'} target`;
      this.events.record(hpa, 'Normal', 'SuccessfulRescale', `New size: ${desired}; reason: ${why}`, { component: 'horizontal-pod-autoscaler' });
      lastScaleTime = nowIso();
    }
    this.api.setStatus(HPA, ns, hpa.metadata.name!, {
      observedGeneration: hpa.metadata.generation,
      ...(lastScaleTime ? { lastScaleTime } : {}),
      currentReplicas: current,
      desiredReplicas: desired,
      currentMetrics:
        utilization === undefined ? [] : [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: utilization, averageValue: `${Math.round(sum.used / Math.max(1, pods.length))}m` } } }],
      conditions: [
        condition('AbleToScale', true, 'ReadyForNewScale', 'recommended size matches current size'),
        condition('ScalingActive', utilization !== undefined, utilization !== undefined ? 'ValidMetricFound' : 'FailedGetResourceMetric', utilization !== undefined ? 'the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)' : 'no ready pods to take CPU from'),
        condition('ScalingLimited', desired === min || desired === max, desired === max ? 'TooManyReplicas' : desired === min ? 'TooFewReplicas' : 'DesiredWithinRange', `the desired count is ${desired === max ? 'at the maximum' : desired === min ? 'at the minimum' : 'within the acceptable range'}`),
      ],
    });
  }
}

// The transition time stays fixed per sync so an unchanged status is not a write (setStatus
// skips equal statuses): a condition's time is when the sim first said it, close enough here.
const STARTED = nowIso();
function condition(type: string, status: boolean, reason: string, message: string) {
  return { type, status: status ? 'True' : 'False', lastTransitionTime: STARTED, reason, message };
}
