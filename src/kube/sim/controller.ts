// The built-in controllers: StatefulSets and Deployments become pods, pods walk through a
// simulated lifecycle (scheduled → containers created → running and Ready after the ready
// delay, or a fault), and workload and PodDisruptionBudget status follows the pods.
//
// Keying and concurrency: reconciles are keyed by kind/namespace/name and coalesced in a
// queue drained on the next macrotask, so a burst of events costs one reconcile per object.
// Each pod has at most one lifecycle timer, keyed by uid; a timer that fires for a pod that
// was replaced (same name, new uid) does nothing. All writes go through KubeApi, so clients
// see them as ordinary watch events, and status writes that change nothing are skipped.
//
// Deliberate simplifications: Deployments own their pods directly (no ReplicaSets); pods
// are deleted at once (no graceful termination); a StatefulSet rolling update replaces a pod
// of an old revision that is not Ready without waiting for it (a real cluster would wait
// forever on a broken pod, which helps nobody in a simulator).
import { createHash } from 'node:crypto';
import type { Logger } from '../../log';
import type { KubeApi } from './api';
import { mustResourceForKind, type ResourceDef } from './resources';
import type { ObjectStore } from './store';
import type { KubeObject, OwnerReference, StoredEvent } from './types';
import { containerStatus, faultFromImage, isPodReady, podStatus, type ContainerStage, type Fault, type PodPlacement } from './pod-status';
import { selectorMatches } from './validate';

export interface ControllerOptions {
  /** Time from pod creation to Ready (slow images take 10×). */
  readyDelayMs: number;
  /** Multiplies minReadySeconds; tests set it low so availability does not take real seconds. */
  minReadyScale: number;
  /** Multiplies progressDeadlineSeconds of Deployments (1 = real seconds). */
  progressDeadlineScale: number;
}

/** How much longer a `slow` image takes to become ready. */
const SLOW_FACTOR = 10;
/** Crash-loop back-off doubles per restart up to this many ready delays, like the kubelet's cap. */
const MAX_BACKOFF_FACTOR = 32;
/** Field manager of the controller's own writes, as in a real cluster's managedFields. */
const MANAGER = 'kube-controller-manager';
/** Simulated nodes pods are spread over (hostIP 10.0.0.x); three zones, like a small cluster. */
const NODES = 3;

const POD = mustResourceForKind('v1', 'Pod');
const STS = mustResourceForKind('apps/v1', 'StatefulSet');
const DEPLOY = mustResourceForKind('apps/v1', 'Deployment');
const PDB = mustResourceForKind('policy/v1', 'PodDisruptionBudget');

interface PodRun {
  uid: string;
  ns: string;
  name: string;
  tick: number;
  timer?: NodeJS.Timeout;
  placement: PodPlacement;
  /** startedAt per container, fixed once it runs. */
  startedAt: Map<string, string>;
}

const nowIso = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as any)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as any)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

// Stored objects are never mutated, so a template's hash can be cached by identity; every pod
// event reconciles its owner, and hashing the template each time was most of that cost.
const hashCache = new WeakMap<object, string>();

/** Short hash of a pod template: names revisions and pod-template-hash labels. */
export function templateHash(template: unknown): string {
  const cached = template && typeof template === 'object' ? hashCache.get(template) : undefined;
  if (cached) return cached;
  const h = createHash('sha256').update(stableJson(template)).digest('hex').slice(0, 10);
  if (template && typeof template === 'object') hashCache.set(template, h);
  return h;
}

/** Resolves an int-or-percent against `total`, rounding like the deployment controller. */
export function intOrPercent(v: unknown, total: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.endsWith('%')) {
    const x = (Number(v.slice(0, -1)) * total) / 100;
    return roundUp ? Math.ceil(x) : Math.floor(x);
  }
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return 0;
}

const controllerOf = (o: KubeObject): OwnerReference | undefined => o.metadata.ownerReferences?.find((r) => r.controller);

function qosClass(spec: any): string {
  const cs: any[] = spec?.containers ?? [];
  const res = cs.map((c) => c.resources ?? {});
  if (res.every((r) => !r.requests && !r.limits)) return 'BestEffort';
  const guaranteed = res.every((r) => r.limits?.cpu && r.limits?.memory && (!r.requests || ((r.requests.cpu ?? r.limits.cpu) === r.limits.cpu && (r.requests.memory ?? r.limits.memory) === r.limits.memory)));
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

export class WorkloadController {
  private readonly queue = new Map<string, { def: ResourceDef; ns: string; name: string }>();
  private drainScheduled: NodeJS.Immediate | undefined;
  private readonly runs = new Map<string, PodRun>();
  private readonly readySince = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly faults = new Map<string, Fault>();
  /** Due time of the pending availability re-check per workload, so reconciles add no timers. */
  private readonly rechecks = new Map<string, number>();
  /** Per Deployment uid: the rollout's last observed progress and when it happened. */
  private readonly progress = new Map<string, { mark: string; at: number; timed: boolean }>();
  private nextPodIp = 1;
  private nextNode = 0;
  private stopped = false;

  constructor(
    private readonly api: KubeApi,
    private readonly store: ObjectStore,
    private readonly opts: ControllerOptions,
    private readonly logger: Logger,
  ) {
    store.onChange((def, ev) => this.onEvent(def, ev));
  }

  stop(): void {
    this.stopped = true;
    if (this.drainScheduled) clearImmediate(this.drainScheduled);
    for (const r of this.runs.values()) if (r.timer) clearTimeout(r.timer);
    for (const t of this.timers) clearTimeout(t);
    this.runs.clear();
    this.timers.clear();
  }

  /** Sets (or with undefined clears) the fault of a workload or pod by namespace/name. */
  setFault(ns: string, name: string, fault: Fault | undefined): { pods: string[] } {
    const key = `${ns}/${name}`;
    if (fault) this.faults.set(key, fault);
    else this.faults.delete(key);
    const affected: string[] = [];
    for (const pod of this.store.list(POD, ns)) {
      const owner = controllerOf(pod);
      if (pod.metadata.name !== name && owner?.name !== name) continue;
      affected.push(pod.metadata.name!);
      const run = this.runs.get(pod.metadata.uid!);
      if (run) {
        // The containers restart under the new fault, keeping the pod's placement.
        run.tick = 0;
        run.startedAt.clear();
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

  private onEvent(def: ResourceDef, ev: StoredEvent): void {
    if (this.stopped) return;
    const o = ev.object;
    const ns = o.metadata.namespace ?? '';
    if (def === STS || def === DEPLOY) {
      if (ev.type !== 'DELETED') this.enqueue(def, ns, o.metadata.name!);
      else this.progress.delete(o.metadata.uid!);
      return;
    }
    if (def === PDB) {
      if (ev.type !== 'DELETED') this.enqueue(PDB, ns, o.metadata.name!);
      return;
    }
    if (def !== POD) return;
    const uid = o.metadata.uid!;
    if (ev.type === 'ADDED' && !this.runs.has(uid)) this.startPod(o);
    if (ev.type === 'DELETED') {
      const run = this.runs.get(uid);
      if (run?.timer) clearTimeout(run.timer);
      this.runs.delete(uid);
      this.readySince.delete(uid);
    }
    const owner = controllerOf(o);
    if (owner?.kind === 'StatefulSet') this.enqueue(STS, ns, owner.name);
    else if (owner?.kind === 'Deployment') this.enqueue(DEPLOY, ns, owner.name);
    // Only the budgets whose selector takes this pod (now or before the change) can move.
    // Requeueing every budget of the namespace on every pod event, each then scanning every
    // pod, made a 1,000-sentinel fleet cubic: seconds of CPU per wave in the benchmark.
    const labels = o.metadata.labels ?? {};
    const before = ev.type === 'MODIFIED' ? ev.previous?.metadata.labels : undefined;
    for (const pdb of this.store.values(PDB, ns)) {
      const sel = pdb.spec?.selector ?? {};
      if (selectorMatches(sel, labels) || (before && selectorMatches(sel, before))) this.enqueue(PDB, ns, pdb.metadata.name!);
    }
  }

  private enqueue(def: ResourceDef, ns: string, name: string): void {
    this.queue.set(`${def.kind}|${ns}|${name}`, { def, ns, name });
    if (!this.drainScheduled) this.drainScheduled = setImmediate(() => this.drain());
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.stopped) fn();
    }, ms);
    this.timers.add(t);
  }

  private drain(): void {
    this.drainScheduled = undefined;
    if (this.stopped) return;
    const items = [...this.queue.values()];
    this.queue.clear();
    for (const it of items) {
      try {
        if (it.def === STS) this.reconcileStatefulSet(it.ns, it.name);
        else if (it.def === DEPLOY) this.reconcileDeployment(it.ns, it.name);
        else if (it.def === PDB) this.reconcilePdb(it.ns, it.name);
      } catch (err) {
        this.logger.error({ err, kind: it.def.kind, namespace: it.ns, name: it.name }, 'kube-sim reconcile failed');
      }
    }
  }

  // ---- pods ----

  private faultFor(pod: KubeObject, image: string | undefined): Fault | undefined {
    const ns = pod.metadata.namespace ?? '';
    const byPod = this.faults.get(`${ns}/${pod.metadata.name}`);
    if (byPod) return byPod;
    const owner = controllerOf(pod);
    const byOwner = owner ? this.faults.get(`${ns}/${owner.name}`) : undefined;
    return byOwner ?? faultFromImage(image);
  }

  private startPod(pod: KubeObject): void {
    const n = this.nextPodIp++;
    // hostIP follows the node the pod was placed on; pods created without one get spread.
    const placed = /^kube-sim-node-(\d+)$/.exec(String(pod.spec?.nodeName ?? ''));
    const node = placed ? Number(placed[1]) : n % NODES;
    const run: PodRun = {
      uid: pod.metadata.uid!,
      ns: pod.metadata.namespace ?? '',
      name: pod.metadata.name!,
      tick: 0,
      placement: { hostIP: `10.0.0.${node + 1}`, podIP: `10.244.${(n >> 8) & 0xff}.${n & 0xff}`, startTime: nowIso() },
      startedAt: new Map(),
    };
    this.runs.set(run.uid, run);
    // Deferred: writing from inside the store's event callback would reorder events.
    this.later(0, () => {
      const current = this.currentPod(run);
      if (!current) return;
      this.writePodStatus(run, current);
      this.scheduleTick(run, current);
    });
  }

  private currentPod(run: PodRun): KubeObject | undefined {
    const pod = this.store.get(POD, run.ns, run.name);
    return pod && pod.metadata.uid === run.uid && this.runs.get(run.uid) === run ? pod : undefined;
  }

  private containerFaults(pod: KubeObject): { name: string; image?: string; fault?: Fault }[] {
    return ((pod.spec?.containers ?? []) as { name: string; image?: string }[]).map((c) => ({ name: c.name, image: c.image, fault: this.faultFor(pod, c.image) }));
  }

  private scheduleTick(run: PodRun, pod: KubeObject): void {
    if (run.timer) clearTimeout(run.timer);
    run.timer = undefined;
    const cs = this.containerFaults(pod);
    const d = Math.max(1, this.opts.readyDelayMs);
    let delay: number | undefined;
    if (run.tick === 0) delay = cs.some((c) => c.fault === 'slow') ? d * SLOW_FACTOR : d;
    else if (cs.some((c) => c.fault === 'crash' || c.fault === 'oom')) delay = d * Math.min(2 ** (run.tick - 1), MAX_BACKOFF_FACTOR);
    else if (cs.some((c) => c.fault === 'pullfail') && run.tick === 1) delay = d;
    if (delay === undefined) return;
    run.timer = setTimeout(() => {
      run.timer = undefined;
      if (this.stopped) return;
      const current = this.currentPod(run);
      if (!current) return;
      run.tick++;
      this.writePodStatus(run, current);
      this.scheduleTick(run, current);
    }, delay);
  }

  private stageOf(run: PodRun, c: { name: string; fault?: Fault }, now: string): ContainerStage {
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

  private writePodStatus(run: PodRun, pod: KubeObject): void {
    const now = nowIso();
    const containers = this.containerFaults(pod).map((c) => {
      const stage = this.stageOf(run, c, now);
      return containerStatus(c, stage, stage.kind === 'crashed' ? stage.restartCount : 0);
    });
    const status = { ...podStatus(run.placement, containers, pod.status, now), qosClass: qosClass(pod.spec) };
    const ready = containers.length > 0 && containers.every((c) => c.ready === true);
    if (ready && !this.readySince.has(run.uid)) this.readySince.set(run.uid, Date.now());
    if (!ready) this.readySince.delete(run.uid);
    this.api.setStatus(POD, run.ns, run.name, status);
  }

  private isAvailable(pod: KubeObject, minReadySeconds: number): boolean {
    if (!isPodReady(pod)) return false;
    const since = this.readySince.get(pod.metadata.uid!) ?? Date.now();
    return Date.now() - since >= minReadySeconds * 1000 * this.opts.minReadyScale;
  }

  /** Re-checks availability once the pods that are ready but not yet available get there. */
  private recheckAvailability(def: ResourceDef, ns: string, name: string, pods: KubeObject[], minReadySeconds: number): void {
    if (minReadySeconds <= 0) return;
    const waitMs = minReadySeconds * 1000 * this.opts.minReadyScale;
    let soonest = Infinity;
    for (const p of pods) {
      if (!isPodReady(p)) continue;
      const since = this.readySince.get(p.metadata.uid!);
      if (since === undefined) continue;
      const left = since + waitMs - Date.now();
      if (left > 0) soonest = Math.min(soonest, left);
    }
    if (soonest === Infinity) return;
    const key = `${def.kind}|${ns}|${name}`;
    const due = Date.now() + Math.ceil(soonest) + 1;
    const pending = this.rechecks.get(key);
    if (pending !== undefined && pending <= due && pending >= Date.now()) return;
    this.rechecks.set(key, due);
    this.later(due - Date.now(), () => {
      if (this.rechecks.get(key) === due) this.rechecks.delete(key);
      this.enqueue(def, ns, name);
    });
  }

  private ownedPods(owner: KubeObject): KubeObject[] {
    const out: KubeObject[] = [];
    for (const d of this.store.dependentsOf(owner.metadata.uid!)) {
      if (d.def !== POD) continue;
      const p = this.store.get(POD, d.ns, d.name);
      if (p && controllerOf(p)?.uid === owner.metadata.uid) out.push(p);
    }
    return out;
  }

  private createPod(owner: KubeObject, name: string, extraLabels: Record<string, string>, extraSpec: Record<string, unknown>): void {
    const template = owner.spec.template ?? {};
    const node = `kube-sim-node-${this.nextNode++ % NODES}`;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: owner.metadata.namespace,
        labels: { ...(template.metadata?.labels ?? {}), ...extraLabels },
        ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
        ownerReferences: [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name!, uid: owner.metadata.uid!, controller: true, blockOwnerDeletion: true }],
      },
      spec: { ...structuredClone(template.spec ?? {}), nodeName: node, ...extraSpec },
    };
    try {
      this.api.create(POD, owner.metadata.namespace ?? '', pod, { fieldManager: MANAGER });
    } catch (err) {
      this.logger.warn({ err, pod: name, owner: owner.metadata.name }, 'kube-sim pod create failed');
    }
  }

  private deletePod(pod: KubeObject): void {
    try {
      this.api.delete(POD, pod.metadata.namespace ?? '', pod.metadata.name!);
    } catch {
      // Already gone: nothing to do.
    }
  }

  // ---- StatefulSet ----

  private reconcileStatefulSet(ns: string, name: string): void {
    const sts = this.store.get(STS, ns, name);
    if (!sts) return;
    const spec = sts.spec ?? {};
    const replicas: number = spec.replicas ?? 1;
    const parallel = spec.podManagementPolicy === 'Parallel';
    const minReady: number = spec.minReadySeconds ?? 0;
    const updateRevision = `${name}-${templateHash(spec.template)}`;
    const revisionOf = (p: KubeObject) => p.metadata.labels?.['controller-revision-hash'];
    const byOrdinal = new Map<number, KubeObject>();
    for (const p of this.ownedPods(sts)) {
      const m = /-(\d+)$/.exec(p.metadata.name!);
      if (m && p.metadata.name === `${name}-${m[1]}`) byOrdinal.set(Number(m[1]), p);
    }
    const create = (i: number) =>
      this.createPod(
        sts,
        `${name}-${i}`,
        { 'controller-revision-hash': updateRevision, 'statefulset.kubernetes.io/pod-name': `${name}-${i}`, 'apps.kubernetes.io/pod-index': String(i) },
        { hostname: `${name}-${i}`, ...(spec.serviceName ? { subdomain: spec.serviceName } : {}) },
      );

    // Scale down: highest ordinals first; ordered policy removes one at a time.
    const extra = [...byOrdinal.keys()].filter((i) => i >= replicas).sort((a, b) => b - a);
    for (const i of parallel ? extra : extra.slice(0, 1)) {
      this.deletePod(byOrdinal.get(i)!);
      byOrdinal.delete(i);
    }
    // Scale up: ordered policy creates the lowest missing ordinal once all before it are Ready.
    if (extra.length === 0 || parallel) {
      for (let i = 0; i < replicas; i++) {
        const p = byOrdinal.get(i);
        if (p) {
          if (!parallel && !isPodReady(p)) break;
          continue;
        }
        create(i);
        if (!parallel) break;
      }
    }
    // Rolling update, highest ordinal first: broken outdated pods go at once, healthy ones
    // one at a time once every pod is Ready.
    const partition: number = spec.updateStrategy?.rollingUpdate?.partition ?? 0;
    if ((spec.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate') {
      const outdated = [...byOrdinal.entries()].filter(([i, p]) => i < replicas && i >= partition && revisionOf(p) !== updateRevision).sort((a, b) => b[0] - a[0]);
      const broken = outdated.filter(([, p]) => !isPodReady(p));
      for (const [i, p] of broken) {
        this.deletePod(p);
        byOrdinal.delete(i);
      }
      const allReady = [...byOrdinal.entries()].filter(([i]) => i < replicas).every(([, p]) => isPodReady(p)) && byOrdinal.size >= replicas;
      if (broken.length === 0 && outdated.length > 0 && allReady) {
        const [i, p] = outdated[0]!;
        this.deletePod(p);
        byOrdinal.delete(i);
      }
    }

    const pods = this.ownedPods(sts);
    const prev = sts.status ?? {};
    const updated = pods.filter((p) => revisionOf(p) === updateRevision).length;
    const done = updated === replicas && pods.length === replicas;
    const currentRevision: string = done ? updateRevision : (prev.currentRevision ?? updateRevision);
    const status = {
      observedGeneration: sts.metadata.generation,
      replicas: pods.length,
      readyReplicas: pods.filter(isPodReady).length,
      currentReplicas: pods.filter((p) => revisionOf(p) === currentRevision).length,
      updatedReplicas: updated,
      availableReplicas: pods.filter((p) => this.isAvailable(p, minReady)).length,
      currentRevision,
      updateRevision,
      collisionCount: 0,
    };
    this.api.setStatus(STS, ns, name, status);
    this.recheckAvailability(STS, ns, name, pods, minReady);
  }

  // ---- Deployment ----

  private reconcileDeployment(ns: string, name: string): void {
    const dep = this.store.get(DEPLOY, ns, name);
    if (!dep) return;
    const spec = dep.spec ?? {};
    const desired: number = spec.replicas ?? 1;
    const minReady: number = spec.minReadySeconds ?? 0;
    const hash = templateHash(spec.template);
    const all = this.ownedPods(dep);
    const isNew = (p: KubeObject) => p.metadata.labels?.['pod-template-hash'] === hash;
    let newPods = all.filter(isNew);
    let oldPods = all.filter((p) => !isNew(p));
    const available = (p: KubeObject) => this.isAvailable(p, minReady);
    const create = (count: number) => {
      for (let i = 0; i < count; i++) {
        this.createPod(dep, `${name}-${hash}-${randomSuffix()}`, { 'pod-template-hash': hash }, {});
      }
    };
    const remove = (pods: KubeObject[]) => pods.forEach((p) => this.deletePod(p));
    // Unavailable pods go first, then the newest.
    const byRemovalOrder = (pods: KubeObject[]) =>
      [...pods].sort((a, b) => Number(available(a)) - Number(available(b)) || String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp)));

    const strategy = spec.strategy?.type ?? 'RollingUpdate';
    const maxSurge = strategy === 'RollingUpdate' ? intOrPercent(spec.strategy?.rollingUpdate?.maxSurge ?? '25%', desired, true) : 0;
    let maxUnavailable = strategy === 'RollingUpdate' ? intOrPercent(spec.strategy?.rollingUpdate?.maxUnavailable ?? '25%', desired, false) : desired;
    if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
    const minAvailable = Math.max(0, desired - maxUnavailable);

    if (strategy === 'Recreate') {
      if (oldPods.length > 0) {
        remove(oldPods);
        oldPods = [];
      } else if (newPods.length < desired) create(desired - newPods.length);
      else if (newPods.length > desired) remove(byRemovalOrder(newPods).slice(0, newPods.length - desired));
    } else {
      if (newPods.length > desired) {
        const drop = byRemovalOrder(newPods).slice(0, newPods.length - desired);
        remove(drop);
        newPods = newPods.filter((p) => !drop.includes(p));
      } else {
        const canCreate = Math.min(desired - newPods.length, desired + maxSurge - (newPods.length + oldPods.length));
        if (canCreate > 0) create(canCreate);
      }
      // Scale old pods down without going under minAvailable (counting only available pods).
      const availableCount = [...newPods, ...oldPods].filter(available).length;
      const newUnavailable = newPods.filter((p) => !available(p)).length;
      const maxCleanup = newPods.length + oldPods.length - minAvailable - newUnavailable;
      let budget = Math.max(0, maxCleanup);
      const unhealthyOld = oldPods.filter((p) => !available(p)).slice(0, budget);
      remove(unhealthyOld);
      budget -= unhealthyOld.length;
      oldPods = oldPods.filter((p) => !unhealthyOld.includes(p));
      const healthyDown = Math.min(oldPods.length, Math.max(0, availableCount - minAvailable));
      if (healthyDown > 0) remove(byRemovalOrder(oldPods).slice(0, healthyDown));
    }

    const pods = this.ownedPods(dep);
    const updated = pods.filter(isNew).length;
    const ready = pods.filter(isPodReady).length;
    const avail = pods.filter(available).length;
    const complete = updated === desired && avail === desired && pods.length === desired;
    // A rollout that makes no progress for progressDeadlineSeconds is reported as failed
    // (Progressing=False, ProgressDeadlineExceeded); any change of the counts is progress.
    const mark = `${dep.metadata.generation}/${updated}/${ready}/${avail}/${pods.length}`;
    const uid = dep.metadata.uid!;
    let prog = this.progress.get(uid);
    if (!prog || prog.mark !== mark) this.progress.set(uid, (prog = { mark, at: Date.now(), timed: false }));
    const deadlineMs = (spec.progressDeadlineSeconds ?? 600) * 1000 * this.opts.progressDeadlineScale;
    const stalled = !complete && Date.now() - prog.at >= deadlineMs;
    if (!complete && !stalled && !prog.timed) {
      prog.timed = true;
      const at = prog.at;
      this.later(Math.max(1, Math.ceil(at + deadlineMs - Date.now()) + 1), () => {
        if (this.progress.get(uid)?.at === at) this.enqueue(DEPLOY, ns, name);
      });
    }
    if (complete) this.progress.delete(uid);
    const now = nowIso();
    const prevConds: { type: string; status: string; reason?: string; lastTransitionTime?: string; lastUpdateTime?: string }[] = dep.status?.conditions ?? [];
    const cond = (type: string, ok: boolean, reason: string, message: string) => {
      const prev = prevConds.find((c) => c.type === type);
      const status = ok ? 'True' : 'False';
      const same = prev && prev.status === status && prev.reason === reason;
      return { type, status, lastUpdateTime: same ? prev.lastUpdateTime ?? now : now, lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime ?? now : now, reason, message };
    };
    const rsName = `${name}-${hash}`;
    const conditions = [
      cond('Available', avail >= minAvailable, avail >= minAvailable ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable', avail >= minAvailable ? 'Deployment has minimum availability.' : 'Deployment does not have minimum availability.'),
      stalled
        ? cond('Progressing', false, 'ProgressDeadlineExceeded', `ReplicaSet "${rsName}" has timed out progressing.`)
        : cond('Progressing', true, complete ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated', complete ? `ReplicaSet "${rsName}" has successfully progressed.` : `ReplicaSet "${rsName}" is progressing.`),
    ];
    const status: Record<string, unknown> = {
      observedGeneration: dep.metadata.generation,
      replicas: pods.length,
      updatedReplicas: updated,
      readyReplicas: ready,
      availableReplicas: avail,
      conditions,
    };
    const unavailable = Math.max(0, Math.max(desired, pods.length) - avail);
    if (unavailable > 0) status.unavailableReplicas = unavailable;
    this.api.setStatus(DEPLOY, ns, name, status);
    this.recheckAvailability(DEPLOY, ns, name, pods, minReady);
  }

  // ---- PodDisruptionBudget ----

  private reconcilePdb(ns: string, name: string): void {
    const pdb = this.store.get(PDB, ns, name);
    if (!pdb) return;
    const selector = pdb.spec?.selector ?? {};
    const pods = [...this.store.values(POD, ns)].filter((p) => selectorMatches(selector, p.metadata.labels ?? {}));
    const healthy = pods.filter(isPodReady).length;
    const expected = pods.length;
    let desiredHealthy: number;
    if (pdb.spec?.minAvailable !== undefined) desiredHealthy = intOrPercent(pdb.spec.minAvailable, expected, true);
    else if (pdb.spec?.maxUnavailable !== undefined) desiredHealthy = Math.max(0, expected - intOrPercent(pdb.spec.maxUnavailable, expected, true));
    else desiredHealthy = 0;
    const allowed = Math.max(0, healthy - desiredHealthy);
    const prev = (pdb.status?.conditions ?? []).find((c: { type: string }) => c.type === 'DisruptionAllowed');
    const condStatus = allowed > 0 ? 'True' : 'False';
    const status = {
      observedGeneration: pdb.metadata.generation,
      currentHealthy: healthy,
      desiredHealthy,
      disruptionsAllowed: allowed,
      expectedPods: expected,
      conditions: [
        {
          type: 'DisruptionAllowed',
          status: condStatus,
          reason: allowed > 0 ? 'SufficientPods' : 'InsufficientPods',
          message: '',
          observedGeneration: pdb.metadata.generation,
          lastTransitionTime: prev && prev.status === condStatus ? prev.lastTransitionTime : nowIso(),
        },
      ],
    };
    this.api.setStatus(PDB, ns, name, status);
  }
}

function randomSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
}
