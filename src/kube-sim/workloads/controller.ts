// The built-in controllers: StatefulSets and Deployments become pods, pods walk through a
// simulated lifecycle (pods.ts), and workload and PodDisruptionBudget status follows the pods.
// The decisions are pure planners (statefulset.ts, deployment.ts, pdb.ts); this file gathers
// their input from the store and carries out what they decide.
//
// Keying and concurrency: reconciles are keyed by kind/namespace/name and coalesced in a
// queue drained on the next macrotask, so a burst of events costs one reconcile per object.
// All writes go through SimApi, so clients see them as ordinary watch events, and status
// writes that change nothing are skipped.
//
// Deliberate simplifications: Deployments own their pods directly (no ReplicaSets); pods are
// deleted at once (no graceful termination).
//
// Over 400 lines: the planners, the pod runner and the gates are already apart; what is left
// shares the one queue, its timers and the per-object retry and progress maps, which a split
// would pass back and forth, plus the thin admin surface (faults, gates, node usage) tests call.
import type { Logger } from '../../log';
import { mustResourceForKind, type ResourceDef } from '../resources';
import type { ObjectStore } from '../object-store';
import type { SimApi } from '../sim-api';
import { SimError } from '../status';
import type { KubeObject, StoredEvent } from '../types';
import { selectorMatches } from '../validate';
import { SelectorIndex } from './selector-index';
import { deploymentComplete, deploymentStatus, minAvailable, planDeployment, rolloutProgress, type Progress } from './deployment';
import type { EventRecorder } from './events';
import { pdbStatus } from './pdb';
import { isPodReady, type Fault } from './pod-status';
import { NodePool } from './capacity';
import { DEFAULT_NODE_SHAPE, type NodeShape } from './scheduler';
import { PodRunner } from './pods';
import { PodGates, type Gate } from './gates';
import { planStatefulSet, statefulSetStatus } from './statefulset';
import { controllerOf, nowIso, randomSuffix, templateHash } from './util';

export { templateHash, intOrPercent } from './util';

export interface ControllerOptions {
  /** Time from pod creation to Ready (slow images take 10×). */
  readyDelayMs: number;
  /** Multiplies minReadySeconds; tests set it low so availability does not take real seconds. */
  minReadyScale: number;
  /** Multiplies progressDeadlineSeconds of Deployments (1 = real seconds). */
  progressDeadlineScale: number;
  /** The nodes and their room (capacity.ts); absent: nodes without limit. */
  nodes?: NodeShape | undefined;
}

/** First retry of a refused pod create, doubling per refusal up to the cap: quick for a
 *  quota that frees up soon, and not hammering the API for one that does not. */
const CREATE_RETRY_MS = 200;
const CREATE_RETRY_MAX_MS = 10_000;

/** Field manager of the controller's own writes, as in a real cluster's managedFields. */
const MANAGER = 'kube-controller-manager';

const POD = mustResourceForKind('v1', 'Pod');
const STS = mustResourceForKind('apps/v1', 'StatefulSet');
const DEPLOY = mustResourceForKind('apps/v1', 'Deployment');
const PDB = mustResourceForKind('policy/v1', 'PodDisruptionBudget');

export class WorkloadController {
  private readonly queue = new Map<string, { def: ResourceDef; ns: string; name: string }>();
  private drainScheduled: NodeJS.Immediate | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Due time of the pending availability re-check per workload, so reconciles add no timers. */
  private readonly rechecks = new Map<string, number>();
  /** Per Deployment uid: the rollout's last observed progress, and whether a re-check is set. */
  private readonly progress = new Map<string, Progress & { timed: boolean }>();
  /** Per workload uid: refused pod creates in a row, and whether a retry is set. */
  private readonly refused = new Map<string, { count: number; timed: boolean }>();
  /** Per workload uid: the API's message for its last refused pod create. */
  private readonly createErrors = new Map<string, string>();
  private readonly pods: PodRunner;
  private readonly gates = new PodGates();
  private readonly selectors = new SelectorIndex();
  private stopped = false;

  constructor(
    private readonly api: SimApi,
    private readonly store: ObjectStore,
    private readonly events: EventRecorder,
    private readonly opts: ControllerOptions,
    private readonly logger: Logger,
  ) {
    this.pods = new PodRunner(api, store, events, opts.readyDelayMs, new NodePool(opts.nodes ?? DEFAULT_NODE_SHAPE, opts.nodes !== undefined), this.gates);
    // Built with the store (sim.ts), before any object: every pod and budget reaches the
    // label index through onEvent.
    store.onChange((def, ev) => this.onEvent(def, ev));
  }

  stop(): void {
    this.stopped = true;
    if (this.drainScheduled) clearImmediate(this.drainScheduled);
    this.pods.stop();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  setFault(ns: string, name: string, fault: Fault | undefined): { pods: string[] } {
    return this.pods.setFault(ns, name, fault);
  }

  listFaults(): { namespace: string; name: string; fault: Fault }[] {
    return this.pods.listFaults();
  }

  /** What the pods on each node request (capacity.ts). */
  nodeUsage(): ReturnType<NodePool['usage']> {
    return this.pods.nodes.usage();
  }

  /** Holds pods of an image or a workload before their containers start, until released (gates.ts). */
  hold(gate: Gate): void {
    this.gates.hold(gate);
  }

  /** Lifts a gate; the pods it held (and no other gate holds) start now. */
  release(gate: Gate): { released: boolean; pods: string[] } {
    const released = this.gates.release(gate);
    return { released, pods: released ? this.pods.startReleased() : [] };
  }

  gatesHeld(): { images: string[]; workloads: string[] } {
    return this.gates.list();
  }

  /** The fault a container of `pod` runs under (for its synthetic logs). */
  faultFor(pod: KubeObject, image: string | undefined): Fault | undefined {
    return this.pods.faultFor(pod, image);
  }

  private onEvent(def: ResourceDef, ev: StoredEvent): void {
    if (this.stopped) return;
    const o = ev.object;
    const ns = o.metadata.namespace ?? '';
    if (def === STS || def === DEPLOY) {
      if (ev.type !== 'DELETED') this.enqueue(def, ns, o.metadata.name!);
      else {
        this.progress.delete(o.metadata.uid!);
        this.refused.delete(o.metadata.uid!);
        this.createErrors.delete(o.metadata.uid!);
      }
      return;
    }
    if (def === PDB) {
      this.selectors.budgetChanged(ns, o.metadata.name!, ev.type === 'DELETED' ? undefined : (o.spec?.selector ?? {}));
      if (ev.type !== 'DELETED') this.enqueue(PDB, ns, o.metadata.name!);
      return;
    }
    if (def !== POD) return;
    const labels = o.metadata.labels ?? {};
    const before = ev.type === 'MODIFIED' ? ev.previous?.metadata.labels : undefined;
    this.selectors.podChanged(ns, o.metadata.name!, ev.type === 'DELETED' ? labels : before, ev.type === 'DELETED' ? undefined : labels);
    if (ev.type === 'ADDED') this.pods.start(o);
    if (ev.type === 'DELETED') this.pods.end(o);
    const owner = controllerOf(o);
    if (owner?.kind === 'StatefulSet') this.enqueue(STS, ns, owner.name);
    else if (owner?.kind === 'Deployment') this.enqueue(DEPLOY, ns, owner.name);
    // Only the budgets whose selector takes this pod (now or before the change) can move; the
    // label index names the candidates (selector-index.ts says why it must not scan).
    const candidates = this.selectors.budgetsFor(ns, labels);
    if (before) for (const b of this.selectors.budgetsFor(ns, before)) candidates.add(b);
    for (const name of candidates) {
      const sel = this.store.get(PDB, ns, name)?.spec?.selector ?? {};
      if (selectorMatches(sel, labels) || (before && selectorMatches(sel, before))) this.enqueue(PDB, ns, name);
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

  private isAvailable(pod: KubeObject, minReadySeconds: number): boolean {
    if (!isPodReady(pod)) return false;
    const since = this.pods.readySince.get(pod.metadata.uid!) ?? Date.now();
    return Date.now() - since >= minReadySeconds * 1000 * this.opts.minReadyScale;
  }

  /** Re-checks availability once the pods that are ready but not yet available get there. */
  private recheckAvailability(def: ResourceDef, ns: string, name: string, pods: KubeObject[], minReadySeconds: number): void {
    if (minReadySeconds <= 0) return;
    const waitMs = minReadySeconds * 1000 * this.opts.minReadyScale;
    let soonest = Infinity;
    for (const p of pods) {
      const since = isPodReady(p) ? this.pods.readySince.get(p.metadata.uid!) : undefined;
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

  /**
   * A pod the API refused (quota, admission) is tried again with backoff, as the real
   * controllers requeue a failed sync. Without it a refused create waited for some unrelated
   * event on the workload, possibly forever.
   */
  private retryRefused(def: ResourceDef, owner: KubeObject, refusedNow: boolean): void {
    const uid = owner.metadata.uid!;
    if (!refusedNow) {
      if (!this.refused.get(uid)?.timed) this.refused.delete(uid);
      return;
    }
    const r = this.refused.get(uid) ?? { count: 0, timed: false };
    this.refused.set(uid, r);
    // One retry pending at a time; other reconciles refused meanwhile do not grow the backoff.
    if (r.timed) return;
    r.count++;
    r.timed = true;
    this.later(Math.min(CREATE_RETRY_MAX_MS, CREATE_RETRY_MS * 2 ** (r.count - 1)), () => {
      r.timed = false;
      this.enqueue(def, owner.metadata.namespace ?? '', owner.metadata.name!);
    });
  }

  /** False when the API refused the pod (recorded as a FailedCreate event). */
  private createPod(owner: KubeObject, name: string, extraLabels: Record<string, string>, extraSpec: Record<string, unknown>): boolean {
    const template = owner.spec.template ?? {};
    const spec = { ...structuredClone(template.spec ?? {}), ...extraSpec };
    // Created unbound: the scheduler (pods.ts, capacity.ts) binds it to a node with room.
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
      spec,
    };
    const source = { component: owner.kind === 'StatefulSet' ? 'statefulset-controller' : 'replicaset-controller' };
    try {
      this.api.create(POD, owner.metadata.namespace ?? '', pod, { fieldManager: MANAGER });
      const message = owner.kind === 'StatefulSet' ? `create Pod ${name} in StatefulSet ${owner.metadata.name} successful` : `Created pod: ${name}`;
      this.events.record(owner, 'Normal', 'SuccessfulCreate', message, source);
      this.createErrors.delete(owner.metadata.uid!);
      return true;
    } catch (err) {
      const why = err instanceof SimError ? err.message : String(err);
      this.createErrors.set(owner.metadata.uid!, why);
      const message = owner.kind === 'StatefulSet' ? `create Pod ${name} in StatefulSet ${owner.metadata.name} failed error: ${why}` : `Error creating: ${why}`;
      this.events.record(owner, 'Warning', 'FailedCreate', message, source);
      this.logger.debug({ err, pod: name, owner: owner.metadata.name }, 'kube-sim pod create failed');
      return false;
    }
  }

  private deletePod(owner: KubeObject, name: string): void {
    try {
      this.api.delete(POD, owner.metadata.namespace ?? '', name, { actor: { cause: 'controller', manager: MANAGER } });
      if (owner.kind === 'StatefulSet') {
        this.events.record(owner, 'Normal', 'SuccessfulDelete', `delete Pod ${name} in StatefulSet ${owner.metadata.name} successful`, { component: 'statefulset-controller' });
      }
    } catch {
      // Already gone: nothing to do.
    }
  }

  private reconcileStatefulSet(ns: string, name: string): void {
    const sts = this.store.get(STS, ns, name);
    if (!sts) return;
    const spec = sts.spec ?? {};
    const replicas: number = spec.replicas ?? 1;
    const minReady: number = spec.minReadySeconds ?? 0;
    const updateRevision = `${name}-${templateHash(spec.template)}`;
    const revisionOf = (p: KubeObject) => p.metadata.labels?.['controller-revision-hash'];
    const views = [];
    for (const p of this.ownedPods(sts)) {
      const m = /-(\d+)$/.exec(p.metadata.name!);
      if (m && p.metadata.name === `${name}-${m[1]}`) views.push({ name: p.metadata.name!, ordinal: Number(m[1]), ready: isPodReady(p), revision: revisionOf(p) });
    }
    const plan = planStatefulSet({
      replicas,
      parallel: spec.podManagementPolicy === 'Parallel',
      rollingUpdate: (spec.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate',
      partition: spec.updateStrategy?.rollingUpdate?.partition ?? 0,
      updateRevision,
      pods: views,
    });
    for (const podName of plan.delete) this.deletePod(sts, podName);
    let refused = false;
    for (const i of plan.create) {
      const labels = { 'controller-revision-hash': updateRevision, 'statefulset.kubernetes.io/pod-name': `${name}-${i}`, 'apps.kubernetes.io/pod-index': String(i) };
      const podSpec = { hostname: `${name}-${i}`, ...(spec.serviceName ? { subdomain: spec.serviceName } : {}) };
      if (!this.createPod(sts, `${name}-${i}`, labels, podSpec)) refused = true;
    }
    this.retryRefused(STS, sts, refused);
    const pods = this.ownedPods(sts);
    const status = statefulSetStatus({
      generation: sts.metadata.generation,
      replicas,
      updateRevision,
      previousCurrentRevision: sts.status?.currentRevision,
      pods: pods.map((p) => ({ ready: isPodReady(p), available: this.isAvailable(p, minReady), revision: revisionOf(p) })),
    });
    this.api.setStatus(STS, ns, name, status);
    this.recheckAvailability(STS, ns, name, pods, minReady);
  }

  private reconcileDeployment(ns: string, name: string): void {
    const dep = this.store.get(DEPLOY, ns, name);
    if (!dep) return;
    const spec = dep.spec ?? {};
    const desired: number = spec.replicas ?? 1;
    const minReady: number = spec.minReadySeconds ?? 0;
    const hash = templateHash(spec.template);
    const view = (p: KubeObject) => ({
      name: p.metadata.name!,
      isNew: p.metadata.labels?.['pod-template-hash'] === hash,
      ready: isPodReady(p),
      available: this.isAvailable(p, minReady),
      creationTimestamp: String(p.metadata.creationTimestamp ?? ''),
    });
    const plan = planDeployment({ desired, strategy: spec.strategy, pods: this.ownedPods(dep).map(view) });
    let refused = false;
    for (let i = 0; i < plan.create; i++) {
      if (!this.createPod(dep, `${name}-${hash}-${randomSuffix()}`, { 'pod-template-hash': hash }, {})) refused = true;
    }
    this.retryRefused(DEPLOY, dep, refused);
    for (const podName of plan.delete) this.deletePod(dep, podName);

    const pods = this.ownedPods(dep);
    const views = pods.map(view);
    const complete = deploymentComplete(desired, views);
    const mark = `${dep.metadata.generation}/${views.filter((p) => p.isNew).length}/${views.filter((p) => p.ready).length}/${views.filter((p) => p.available).length}/${pods.length}`;
    const deadlineMs = (spec.progressDeadlineSeconds ?? 600) * 1000 * this.opts.progressDeadlineScale;
    const stalled = this.trackProgress(dep, mark, deadlineMs, complete);
    const status = deploymentStatus({
      name,
      hash,
      generation: dep.metadata.generation,
      desired,
      minAvailable: minAvailable(desired, spec.strategy).minAvailable,
      pods: views,
      stalled,
      previousConditions: dep.status?.conditions ?? [],
      now: nowIso(),
      ...(refused ? { replicaFailure: this.createErrors.get(dep.metadata.uid!) } : {}),
    });
    this.api.setStatus(DEPLOY, ns, name, status);
    this.recheckAvailability(DEPLOY, ns, name, pods, minReady);
  }

  /** Records rollout progress; sets one re-check at the deadline so a stall gets reported. */
  private trackProgress(dep: KubeObject, mark: string, deadlineMs: number, complete: boolean): boolean {
    const uid = dep.metadata.uid!;
    const prev = this.progress.get(uid);
    const r = rolloutProgress(prev, mark, Date.now(), deadlineMs, complete);
    const entry = prev && prev.at === r.progress.at && prev.mark === r.progress.mark ? prev : { ...r.progress, timed: false };
    this.progress.set(uid, entry);
    if (r.recheckInMs !== undefined && !entry.timed) {
      entry.timed = true;
      const at = entry.at;
      const { namespace, name } = dep.metadata;
      this.later(r.recheckInMs, () => {
        if (this.progress.get(uid)?.at === at) this.enqueue(DEPLOY, namespace ?? '', name!);
      });
    }
    if (complete) this.progress.delete(uid);
    return r.stalled;
  }

  private reconcilePdb(ns: string, name: string): void {
    const pdb = this.store.get(PDB, ns, name);
    if (!pdb) return;
    const selector = pdb.spec?.selector ?? {};
    const names = this.selectors.podsFor(ns, selector);
    const candidates = names ? [...names].flatMap((n) => this.store.get(POD, ns, n) ?? []) : [...this.store.values(POD, ns)];
    const pods = candidates.filter((p) => selectorMatches(selector, p.metadata.labels ?? {}));
    const status = pdbStatus({
      spec: pdb.spec,
      generation: pdb.metadata.generation,
      pods: pods.map((p) => ({ ready: isPodReady(p) })),
      previousCondition: (pdb.status?.conditions ?? []).find((c: { type: string }) => c.type === 'DisruptionAllowed'),
      now: nowIso(),
    });
    this.api.setStatus(PDB, ns, name, status);
  }
}
