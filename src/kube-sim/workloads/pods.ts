// The simulated kubelet and scheduler: each pod walks scheduled → containers created →
// running and Ready after the ready delay, or into its fault (crash loop with back-off,
// image pull errors, OOM kills, slow start), writing the pod status and the Events a real
// node would. The scheduler binds a pod to a node with room (capacity.ts: spec.nodeName, as the
// binding subresource sets it); one no node has room for stays Pending with FailedScheduling,
// and is tried again when a pod leaves a node.
//
// Keying: one run per pod uid with at most one timer; a timer that fires for a pod that was
// replaced (same name, new uid) does nothing. Status writes go through SimApi.setStatus, so
// clients see ordinary watch events and unchanged statuses are not written.
import { mustResourceForKind } from '../resources';
import type { SimApi } from '../sim-api';
import type { ObjectStore } from '../object-store';
import type { KubeObject } from '../types';
import type { EventRecorder } from './events';
import type { PodGates } from './gates';
import { containerStatus, faultFromImage, podStatus, type ContainerStage, type Fault, type PodPlacement } from './pod-status';
import { containerSpec, probeFailure } from './probes';
import { NodePool } from './capacity';
import { DEFAULT_NODE_SHAPE, podRequests } from './scheduler';
import { controllerOf, nowIso, qosClass } from './util';

/** How much longer a `slow` image takes to become ready. */
const SLOW_FACTOR = 10;
/** Floor of the period between probes of a failing container, so a short ready delay does
 *  not turn a wrong probe into hundreds of event writes a second (real periods are seconds). */
const MIN_PROBE_PERIOD_MS = 100;
/** Crash-loop back-off doubles per restart up to this many ready delays, like the kubelet's cap. */
const MAX_BACKOFF_FACTOR = 32;

const POD = mustResourceForKind('v1', 'Pod');
const KUBELET = (host: string) => ({ component: 'kubelet', host });

interface PodRun {
  uid: string;
  ns: string;
  name: string;
  tick: number;
  timer?: NodeJS.Timeout;
  placement: PodPlacement;
  node: string;
  /** startedAt per container, fixed once it runs. */
  startedAt: Map<string, string>;
  /** Liveness probe misses in a row per container; at failureThreshold it is restarted. */
  livenessMisses: Map<string, number>;
  /** Restarts the liveness probe caused per container, with the last run's times. */
  probeRestarts: Map<string, { count: number; startedAt: string; finishedAt: string }>;
  /** Whether some probe is failing: the kubelet keeps probing, so the pod keeps ticking. */
  probing: boolean;
}

interface ContainerView {
  name: string;
  image?: string;
  fault?: Fault;
}

export class PodRunner {
  private readonly runs = new Map<string, PodRun>();
  /** When each Ready pod became Ready (ms), for minReadySeconds availability. */
  readonly readySince = new Map<string, number>();
  private readonly faults = new Map<string, Fault>();
  private nextPodIp = 1;
  /** Where the scheduler's round-robin over nodes starts next. */
  private nextNode = 0;
  private stopped = false;

  constructor(
    private readonly api: SimApi,
    private readonly store: ObjectStore,
    private readonly events: EventRecorder,
    private readonly readyDelayMs: number,
    /** The nodes' room (default: nodes without limit, of the default shape). */
    readonly nodes: NodePool = new NodePool(DEFAULT_NODE_SHAPE, false),
    private readonly gates?: PodGates,
  ) {}

  stop(): void {
    this.stopped = true;
    for (const r of this.runs.values()) if (r.timer) clearTimeout(r.timer);
    this.runs.clear();
  }

  has(uid: string): boolean {
    return this.runs.has(uid);
  }

  /** The fault of a container: by pod name, by owning workload name, or by image. */
  faultFor(pod: KubeObject, image: string | undefined): Fault | undefined {
    const ns = pod.metadata.namespace ?? '';
    const byPod = this.faults.get(`${ns}/${pod.metadata.name}`);
    if (byPod) return byPod;
    const owner = controllerOf(pod);
    return (owner ? this.faults.get(`${ns}/${owner.name}`) : undefined) ?? faultFromImage(image);
  }

  /** Sets (or with undefined clears) the fault of a workload or pod by namespace/name. */
  setFault(ns: string, name: string, fault: Fault | undefined): { pods: string[] } {
    const key = `${ns}/${name}`;
    if (fault) this.faults.set(key, fault);
    else this.faults.delete(key);
    const affected: string[] = [];
    for (const pod of this.store.list(POD, ns)) {
      if (pod.metadata.name !== name && controllerOf(pod)?.name !== name) continue;
      affected.push(pod.metadata.name!);
      const run = this.runs.get(pod.metadata.uid!);
      if (run) {
        // The containers restart under the new fault, keeping the pod's placement.
        run.tick = 0;
        run.startedAt.clear();
        run.livenessMisses.clear();
        run.probeRestarts.clear();
        this.readySince.delete(run.uid);
        this.scheduleTick(run, pod);
      }
    }
    return { pods: affected };
  }

  listFaults(): { namespace: string; name: string; fault: Fault }[] {
    return [...this.faults].map(([k, fault]) => {
      const i = k.indexOf('/');
      return { namespace: k.slice(0, i), name: k.slice(i + 1), fault };
    });
  }

  start(pod: KubeObject): void {
    const uid = pod.metadata.uid!;
    if (this.runs.has(uid)) return;
    const named = /^kube-sim-node-(\d+)$/.exec(String(pod.spec?.nodeName ?? ''));
    const ref = { uid, ns: pod.metadata.namespace ?? '', name: pod.metadata.name! };
    const placed = this.nodes.place(ref, podRequests(pod.spec), named ? Number(named[1]) : undefined, this.nextNode);
    if ('message' in placed) {
      // Deferred: writing from inside the store's event callback would reorder events.
      setImmediate(() => this.markUnschedulable(pod, placed.message));
      return;
    }
    if (!named) this.nextNode++;
    const n = this.nextPodIp++;
    const node = placed.node;
    const run: PodRun = {
      uid,
      ns: pod.metadata.namespace ?? '',
      name: pod.metadata.name!,
      tick: 0,
      node: `kube-sim-node-${node}`,
      placement: { hostIP: `10.0.0.${node + 1}`, podIP: `10.244.${(n >> 8) & 0xff}.${n & 0xff}`, startTime: nowIso() },
      startedAt: new Map(),
      livenessMisses: new Map(),
      probeRestarts: new Map(),
      probing: false,
    };
    this.runs.set(uid, run);
    setImmediate(() => {
      if (this.stopped || !this.currentPod(run)) return;
      if (!named) this.api.bindPod(run.ns, run.name, run.node);
      const current = this.currentPod(run);
      if (!current) return;
      this.events.record(current, 'Normal', 'Scheduled', `Successfully assigned ${run.ns}/${run.name} to ${run.node}`, { component: 'default-scheduler' });
      for (const c of this.containers(current)) {
        if (c.image) this.events.record(current, 'Normal', 'Pulling', `Pulling image "${c.image}"`, KUBELET(run.node), containerPath(c));
      }
      this.writeStatus(run, current);
      this.scheduleTick(run, current);
    });
  }

  /** The pod is gone: its run ends, its started containers are stopped, and its room on the
   *  node goes to the pods waiting for some. */
  end(pod: KubeObject): void {
    if (this.nodes.release(pod.metadata.uid!)) this.retryWaiting();
    const run = this.runs.get(pod.metadata.uid!);
    this.runs.delete(pod.metadata.uid!);
    this.readySince.delete(pod.metadata.uid!);
    if (!run) return;
    if (run.timer) clearTimeout(run.timer);
    for (const c of this.containers(pod)) {
      if (run.startedAt.has(c.name)) this.events.record(pod, 'Normal', 'Killing', `Stopping container ${c.name}`, KUBELET(run.node), containerPath(c));
    }
  }

  /** Pods that waited for room are tried again, oldest first; those that still do not fit wait on. */
  private retryWaiting(): void {
    for (const w of this.nodes.waitingPods()) {
      const pod = this.store.get(POD, w.ns, w.name);
      if (pod && pod.metadata.uid === w.uid) this.start(pod);
      else this.nodes.release(w.uid);
    }
  }

  private markUnschedulable(pod: KubeObject, message: string): void {
    const current = this.store.get(POD, pod.metadata.namespace ?? '', pod.metadata.name!);
    if (!current || current.metadata.uid !== pod.metadata.uid || this.stopped || this.runs.has(current.metadata.uid!)) return;
    const was = (current.status?.conditions as { type: string; status: string; lastTransitionTime?: string }[] | undefined)?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
    this.api.setStatus(POD, current.metadata.namespace ?? '', current.metadata.name!, {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', lastProbeTime: null, lastTransitionTime: was?.lastTransitionTime ?? nowIso(), reason: 'Unschedulable', message }],
      qosClass: qosClass(current.spec),
    });
    this.events.record(current, 'Warning', 'FailedScheduling', message, { component: 'default-scheduler' });
  }

  private currentPod(run: PodRun): KubeObject | undefined {
    const pod = this.store.get(POD, run.ns, run.name);
    return pod && pod.metadata.uid === run.uid && this.runs.get(run.uid) === run ? pod : undefined;
  }

  private containers(pod: KubeObject): ContainerView[] {
    return ((pod.spec?.containers ?? []) as { name: string; image?: string }[]).map((c) => ({ name: c.name, image: c.image, fault: this.faultFor(pod, c.image) }));
  }

  private scheduleTick(run: PodRun, pod: KubeObject): void {
    if (run.timer) clearTimeout(run.timer);
    run.timer = undefined;
    // Held by an image gate (gates.ts): no step until released, which calls startReleased.
    if (run.tick === 0 && this.gates?.holds(this.containers(pod).map((c) => c.image), ownerKey(pod))) return;
    const delay = nextDelay(run.tick, this.containers(pod), Math.max(1, this.readyDelayMs), run.probing);
    if (delay === undefined) return;
    run.timer = setTimeout(() => {
      run.timer = undefined;
      if (this.stopped) return;
      const current = this.currentPod(run);
      if (!current) return;
      run.tick++;
      this.writeStatus(run, current);
      this.scheduleTick(run, current);
    }, delay);
  }

  /** After a gate lifted: pods that were held before their first step take it now. */
  startReleased(): string[] {
    const started: string[] = [];
    for (const run of this.runs.values()) {
      const pod = run.tick === 0 && !run.timer ? this.currentPod(run) : undefined;
      if (!pod) continue;
      this.scheduleTick(run, pod);
      if (run.timer) started.push(run.name);
    }
    return started;
  }

  private stageOf(run: PodRun, c: ContainerView, now: string): ContainerStage {
    const t = run.tick;
    if (t === 0) return { kind: 'creating' };
    const started = () => {
      let s = run.startedAt.get(c.name);
      if (!s) run.startedAt.set(c.name, (s = now));
      return s;
    };
    switch (c.fault) {
      case 'pullfail':
        return { kind: 'pullError', reason: t === 1 ? 'ErrImagePull' : 'ImagePullBackOff' };
      case 'crash':
        return { kind: 'crashed', restartCount: t, lastReason: 'Error', lastExitCode: 1, lastStartedAt: started(), lastFinishedAt: now };
      case 'oom':
        if (t === 1) return { kind: 'oomKilled', startedAt: started(), finishedAt: now };
        return { kind: 'crashed', restartCount: t - 1, lastReason: 'OOMKilled', lastExitCode: 137, lastStartedAt: started(), lastFinishedAt: now };
      default:
        return { kind: 'running', startedAt: started() };
    }
  }

  private writeStatus(run: PodRun, pod: KubeObject): void {
    const now = nowIso();
    const views = this.containers(pod);
    const stages = views.map((c) => this.stageOf(run, c, now));
    run.probing = false;
    const containers = views.map((c, i) => {
      const stage = stages[i]!;
      const status = containerStatus(c, stage, stage.kind === 'crashed' ? stage.restartCount : 0);
      return stage.kind === 'running' ? this.probe(run, pod, c, status, now) : status;
    });
    const status = { ...podStatus(run.placement, containers, pod.status, now), qosClass: qosClass(pod.spec) };
    const ready = containers.length > 0 && containers.every((c) => c.ready === true);
    if (ready && !this.readySince.has(run.uid)) this.readySince.set(run.uid, Date.now());
    if (!ready) this.readySince.delete(run.uid);
    this.api.setStatus(POD, run.ns, run.name, status);
    views.forEach((c, i) => this.recordStage(pod, run, c, stages[i]!));
  }

  /**
   * The kubelet's probes of a running container: a failing readiness probe keeps it not
   * Ready; a liveness probe failing failureThreshold times in a row (default 3) kills it and
   * it starts again, counted in restartCount. Each miss is an Unhealthy event.
   */
  private probe(run: PodRun, pod: KubeObject, c: ContainerView, status: Record<string, unknown>, now: string): Record<string, unknown> {
    const spec = containerSpec(pod, c.name);
    if (!spec) return status;
    const rec = (type: 'Normal' | 'Warning', reason: string, message: string) => this.events.record(pod, type, reason, message, KUBELET(run.node), containerPath(c));
    const podIP = run.placement.podIP;
    const liveness = spec.livenessProbe ? probeFailure(spec, spec.livenessProbe, podIP) : undefined;
    if (liveness !== undefined) {
      run.probing = true;
      rec('Warning', 'Unhealthy', `Liveness probe failed: ${liveness}`);
      const misses = (run.livenessMisses.get(c.name) ?? 0) + 1;
      run.livenessMisses.set(c.name, misses);
      if (misses >= (spec.livenessProbe!.failureThreshold ?? 3)) {
        run.livenessMisses.set(c.name, 0);
        const prev = run.probeRestarts.get(c.name);
        run.probeRestarts.set(c.name, { count: (prev?.count ?? 0) + 1, startedAt: run.startedAt.get(c.name) ?? now, finishedAt: now });
        run.startedAt.set(c.name, now);
        rec('Normal', 'Killing', `Container ${c.name} failed liveness probe, will be restarted`);
        rec('Normal', 'Pulled', `Container image "${c.image ?? ''}" already present on machine`);
        rec('Normal', 'Created', `Created container ${c.name}`);
        rec('Normal', 'Started', `Started container ${c.name}`);
      }
    }
    const restarts = run.probeRestarts.get(c.name);
    const out = restarts
      ? {
          ...status,
          restartCount: restarts.count,
          state: { running: { startedAt: run.startedAt.get(c.name) ?? now } },
          lastState: { terminated: { exitCode: 137, reason: 'Error', startedAt: restarts.startedAt, finishedAt: restarts.finishedAt, containerID: `containerd://${c.name}` } },
        }
      : status;
    const readiness = spec.readinessProbe ? probeFailure(spec, spec.readinessProbe, podIP) : undefined;
    if (readiness === undefined) return out;
    run.probing = true;
    rec('Warning', 'Unhealthy', `Readiness probe failed: ${readiness}`);
    return { ...out, ready: false };
  }

  /** The kubelet's events for a container entering `stage`. */
  private recordStage(pod: KubeObject, run: PodRun, c: ContainerView, stage: ContainerStage): void {
    const rec = (type: 'Normal' | 'Warning', reason: string, message: string) => this.events.record(pod, type, reason, message, KUBELET(run.node), containerPath(c));
    const image = c.image ?? '';
    if (stage.kind === 'creating') return;
    if (stage.kind === 'pullError') {
      if (stage.reason === 'ErrImagePull') {
        rec('Warning', 'Failed', `Failed to pull image "${image}": rpc error: code = NotFound desc = failed to pull and unpack image "${image}": not found`);
      } else rec('Normal', 'BackOff', `Back-off pulling image "${image}"`);
      rec('Warning', 'Failed', `Error: ${stage.reason}`);
      return;
    }
    if (run.tick === 1) rec('Normal', 'Pulled', `Successfully pulled image "${image}" in ${Math.max(1, this.readyDelayMs)}ms (${Math.max(1, this.readyDelayMs)}ms including waiting)`);
    if (stage.kind === 'running' && run.tick > 1) return;
    rec('Normal', 'Created', `Created container ${c.name}`);
    rec('Normal', 'Started', `Started container ${c.name}`);
    if (stage.kind === 'crashed' || stage.kind === 'oomKilled') {
      rec('Warning', 'BackOff', `Back-off restarting failed container ${c.name} in pod ${run.name}_${run.ns}(${run.uid})`);
    }
  }
}

const containerPath = (c: ContainerView) => `spec.containers{${c.name}}`;
/** The pod's controlling workload as namespace/name (what a workload gate names). */
const ownerKey = (pod: KubeObject) => {
  const owner = controllerOf(pod);
  return owner ? `${pod.metadata.namespace ?? ''}/${owner.name}` : undefined;
};

/** Milliseconds until the next lifecycle step, or undefined when the pod has settled. A
 *  failing probe is tried again each step (the sim's unit of time stands for periodSeconds). */
export function nextDelay(tick: number, containers: { fault?: Fault }[], readyDelayMs: number, probing = false): number | undefined {
  const d = readyDelayMs;
  if (probing && tick > 0) return Math.max(d, MIN_PROBE_PERIOD_MS);
  if (tick === 0) return containers.some((c) => c.fault === 'slow') ? d * SLOW_FACTOR : d;
  if (containers.some((c) => c.fault === 'crash' || c.fault === 'oom')) return d * Math.min(2 ** (tick - 1), MAX_BACKOFF_FACTOR);
  if (containers.some((c) => c.fault === 'pullfail') && tick === 1) return d;
  return undefined;
}
