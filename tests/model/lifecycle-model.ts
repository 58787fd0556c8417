// The deployment lifecycle as a small pure model (issue 23): what the operator did and what must
// therefore be true of the real system, whatever order the workflows, kranes and ctrl replicas
// happened to run in. It predicts no exact state (timing decides, for example, whether a canary
// completed before an abort reached it); it keeps what was accepted (creates, stop/start,
// aborts, promotes), what the environment was doing (metric, offline regions), and judges each
// snapshot of the real system against the rules. No I/O here: the driver (driver.ts) takes the
// snapshots, the commands (commands.ts) feed both sides.
//
// The rules (issues 23 and 33, DESIGN section 11):
//   traffic   traffic-rules.ts, shared with the chaos harness: weights sum to 100 (or the table
//             is empty), every entry (not only the model's) names a deployment of the
//             environment, none stopped, failed or rolled back; a share above 0 only for one
//             ready in every region; at settle, each region's routes list exactly the ready
//             pods of every entry with a share (an autoscaler's included)
//   limit     a deployment whose failed checks reached failureLimit (over its whole analysis)
//             never has 100% and never ends ready
//   desired   the last accepted stop/start decides the desired state, whatever a walk was doing
//   abort     an accepted abort ends the deployment rolled back with no share, and the stable
//             (still serving) back on 100%, within ABORT_MS; a canary aborted before it had any
//             share never gets one
//   stable    the stable of a canary or blue-green stays running and ready until the switch
//   offline   no walk moves traffic forward while one of its regions is offline
//   settle    every deployment reaches a terminal or steady state within a bound, and the
//             clusters converge to desired state (convergence.ts), krane and ctrl restarts or not
//   answer    every answer is one the model predicts (predict.ts): a 4xx only where it says so
//   promote   a promote answered 200 moved all traffic to its target (unless another deploy
//             was on its way); a rollback made a deployment of the target's spec and image
//   deleted   once its environment is deleted, nothing of it runs or is on its way

/** The defects issue 23 names, which these rules found on the code before branch a-lifecycle's
 *  fixes (merged). While false, the rules that only those defects break are reported, not
 *  failed (for a branch without the fixes); UNKEY_INFRA_MODEL_STRICT=1 checks them anyway. */
export const KNOWN_DEFECTS_FIXED = true;
export const STRICT = KNOWN_DEFECTS_FIXED || process.env.UNKEY_INFRA_MODEL_STRICT === '1';

/** Rules broken only by a known defect: failureLimit reset per step and a failing last check
 *  passing (limit), the walk's rollback over a later start (desired), an abort waiting for the
 *  instances (abort-before-traffic), an offline region counted as ready (offline). */
export const KNOWN_DEFECT_RULES = new Set(['limit', 'desired-overwritten', 'abort-before-traffic', 'offline']);

/**
 * Rules a defect still open breaks, after the fixes: reported, not failed, so `npm test` stays a
 * gate for every other rule (UNKEY_INFRA_MODEL_STRICT=1 fails them too). Empty: the one listed
 * here last (desired-overwritten, once in ~140 sequences) was the model's error, not the
 * system's. Its stop+start command took the order of sending for the order applied; a start that
 * reached the server first was a no-op (`changed: false`) and the stop after it rightly won. The
 * answers now carry the generation each change made, and the model orders by them.
 */
export const OPEN_DEFECT_RULES = new Set<string>();
const STRICT_ENV = process.env.UNKEY_INFRA_MODEL_STRICT === '1';

/** The issue's bound: an accepted abort puts all traffic back on the stable within 5 s. */
export const ABORT_MS = 5_000;

import { tableBreaks } from './traffic-rules';

export type Kind = 'rolling' | 'canary' | 'blue-green';
/** Autoscaled deployments (issue 33): none (a fixed replica), busy (the simulator's `cpuhot`
 *  image, which its autoscaler scales to the maximum) or idle (`cpucold`, stays at the minimum). */
export type Autoscale = 'none' | 'busy' | 'idle';
export type Metric = 'good' | 'bad' | 'absent';
export const TERMINAL = new Set(['ready', 'stopped', 'failed', 'rolled_back']);
export interface ModelDeployment {
  id: string;
  /** Position in the sequence's creates (for messages and the "newest" rule). */
  n: number;
  /** The command number it was created at. */
  createdAt: number;
  kind: Kind;
  failureLimit: number;
  /** The analysis query, unique per deployment, so the stand-in counts its failed checks. */
  query: string;
  /** The deployment serving 100% when this one was created (what an abort returns to). */
  stable: string | null;
  /** The last accepted stop/start, the command number it was accepted at, and whether it
   *  changed anything (a start of a running deployment decides nothing). */
  desired: { state: 'running' | 'stopped'; at: number; changed?: boolean } | null;
  /** Command number of an accepted abort, the share the deployment had just before it, and
   *  whether its stable was serving then (without one a canary is a rolling deploy: an abort
   *  has nothing to return to, and the rules below do not judge it). */
  abort: { at: number; weightBefore: number; stableServing: boolean } | null;
  /** Its image (what a rollback redeploys and a quarantine names). */
  image: string;
  autoscale: Autoscale;
  /** A stop or start changed its desired state (its generation moved): no walk takes a command. */
  generationMoved: boolean;
}

export interface Model {
  /** Commands run so far (stamps "accepted at"). */
  at: number;
  deployments: ModelDeployment[];
  metric: Metric;
  offline: string[];
  /** The sequence's environment was deleted (an accepted deletion). */
  deleted: boolean;
}

export const initialModel = (): Model => ({ at: 0, deployments: [], metric: 'good', offline: [], deleted: false });

/** A deployment as a snapshot shows it; beyond the first three, what the newer rules read. */
export interface DeploymentView {
  status: string;
  desiredState: string;
  error: string | null;
  environmentId?: string;
  image?: string | null;
  regions?: string[];
  replicas?: number;
  autoscaling?: { minReplicas: number; maxReplicas: number } | null;
  rolledBackFrom?: string | null;
  strategy?: string;
  /** A topology of it is meant to run somewhere. */
  topologyRunning?: boolean;
}

/** What the driver reads of the real system, all in one database snapshot except the pods. */
export interface Snapshot {
  /** The sequence's environment (absent in hand-made snapshots: every entry is taken as its). */
  environmentId?: string;
  table: { deploymentId: string; weight: number }[];
  /** The model's deployments and every deployment the table names (one missing: none such). */
  deployments: Record<string, DeploymentView>;
  /** Ready pods per deployment per region, read from each region's simulator. */
  readyPods: Record<string, Record<string, number>>;
  /** Failed checks the stand-in Prometheus answered, per query. */
  failedChecks: Record<string, number>;
  regionStatus: Record<string, string>;
  /** Milliseconds since each region's last sign of life (predict.ts#regionCertainty). */
  regionAgeMs?: Record<string, number>;
  /** Images quarantined in the environment. */
  quarantined?: string[];
  /** Sentinels of the environment with a deploy in progress (a deletion waits for them). */
  sentinelsProgressing?: number;
  /** The environment is deleted in the database. */
  environmentDeleted?: boolean;
  /** The stables each deployment's walks took when they began (their journaled traffic-start):
   *  the model records a stable at create, but the walk chooses its own later. */
  walkStables?: Record<string, string[]>;
}

export interface Violation {
  rule: string;
  message: string;
}

// ---- model updates (each returns a new model) ----

export const tick = (m: Model): Model => ({ ...m, at: m.at + 1 });

export function created(m: Model, d: Omit<ModelDeployment, 'desired' | 'abort' | 'n' | 'createdAt' | 'generationMoved' | 'image' | 'autoscale'> & Partial<Pick<ModelDeployment, 'image' | 'autoscale'>>): Model {
  return { ...m, deployments: [...m.deployments, { image: 'nginx:1.27', autoscale: 'none', ...d, n: m.deployments.length, createdAt: m.at, desired: null, abort: null, generationMoved: false }] };
}

const update = (m: Model, id: string, f: (d: ModelDeployment) => ModelDeployment): Model => ({
  ...m,
  deployments: m.deployments.map((d) => (d.id === id ? f(d) : d)),
});

/** An accepted stop or start; `changed`: it moved the desired state (and its generation). */
export const desiredAccepted = (m: Model, id: string, state: 'running' | 'stopped', changed = true): Model =>
  update(m, id, (d) => ({ ...d, desired: { state, at: m.at, changed }, generationMoved: d.generationMoved || changed }));

export const environmentDeleted = (m: Model): Model => ({ ...m, deleted: true });

type RunState = 'running' | 'stopped';
/** An answer to a stop or start: its status, and (2xx) whether it changed anything and the generation. */
export interface CommandAnswer {
  status: number;
  body: any;
}

/**
 * Of two stop/start answers, the ones that changed the desired state, in the order applied (by
 * the generation each answer carries). An answer that changed nothing decided nothing: the state
 * it asked for was already there when it was applied.
 */
export function appliedInOrder(answers: [RunState, CommandAnswer][]): [RunState, CommandAnswer][] {
  const changed = answers.filter(([, a]) => a.status < 300 && a.body?.changed === true);
  return changed.sort(([, x], [, y]) => (x.body.generation ?? 0) - (y.body.generation ?? 0));
}

export const abortAccepted = (m: Model, id: string, weightBefore: number, stableServing: boolean): Model =>
  update(m, id, (d) => ({ ...d, abort: d.abort ?? { at: m.at, weightBefore, stableServing } }));

/** Whether `id` serves (ready, running, with a share) in the snapshot. */
export function serving(s: Snapshot, id: string | null): boolean {
  const d = id ? s.deployments[id] : undefined;
  return !!d && d.status === 'ready' && d.desiredState === 'running' && weightOf(s, id!) > 0;
}

export const metricSet = (m: Model, metric: Metric): Model => ({ ...m, metric });

export const regionOffline = (m: Model, region: string): Model => ({ ...m, offline: [...new Set([...m.offline, region])] });
export const regionOnline = (m: Model, region: string): Model => ({ ...m, offline: m.offline.filter((r) => r !== region) });

/** The stable of a new deployment: the one alone at 100% and ready, as the snapshot shows. */
export function stableIn(s: Snapshot): string | null {
  const top = s.table.find((b) => b.weight === 100);
  return top && s.deployments[top.deploymentId]?.status === 'ready' ? top.deploymentId : null;
}

export const weightOf = (s: Snapshot, id: string) => s.table.find((b) => b.deploymentId === id)?.weight ?? 0;

// ---- the rules over one snapshot ----

/** The traffic rules of traffic-rules.ts on the snapshot's table: every entry, the model's or not. */
export function trafficViolations(s: Snapshot, regions: readonly string[]): Violation[] {
  const env = s.environmentId ?? '(the environment)';
  const facts = (id: string) => {
    const d = s.deployments[id];
    if (!d) return undefined;
    const ready = Object.fromEntries((d.regions ?? regions).map((r) => [r, s.readyPods[id]?.[r] ?? 0]));
    return { environmentId: d.environmentId ?? env, status: d.status, desiredState: d.desiredState, ready };
  };
  return tableBreaks(env, s.table, facts).map((b) => ({ rule: 'traffic', message: `[${b.rule}] ${b.message}` }));
}

/** Once its environment is deleted, nothing of it runs or is on its way (issue 33). */
export function deletedViolations(m: Model, s: Snapshot): Violation[] {
  if (!m.deleted) return [];
  const out: Violation[] = [];
  if (s.environmentDeleted === false) out.push({ rule: 'deleted', message: `the deletion was answered 200, yet environment ${s.environmentId} is not deleted` });
  for (const d of m.deployments) {
    const r = s.deployments[d.id];
    if (!r) continue;
    if (r.topologyRunning || (r.desiredState === 'running' && ['pending', 'building', 'deploying', 'network'].includes(r.status))) {
      out.push({ rule: 'deleted', message: `${d.id} of the deleted environment is ${r.status}, desired ${r.desiredState}${r.topologyRunning ? ', a topology running' : ''}` });
    }
  }
  if (s.table.length > 0) out.push({ rule: 'deleted', message: `the deleted environment's table is ${s.table.map((b) => `${b.deploymentId}:${b.weight}`).join(', ')}` });
  return out;
}

/**
 * A rollback made a new deployment of its target's spec and image (seed 001), rolling, in the
 * target's environment, naming the target.
 */
export function rollbackViolations(target: DeploymentView & { id: string }, made: DeploymentView & { id: string }): Violation[] {
  const want = { image: target.image, regions: target.regions, replicas: target.replicas, autoscaling: target.autoscaling ?? null, environmentId: target.environmentId, rolledBackFrom: target.id, strategy: 'rolling' };
  const have = { image: made.image, regions: made.regions, replicas: made.replicas, autoscaling: made.autoscaling ?? null, environmentId: made.environmentId, rolledBackFrom: made.rolledBackFrom, strategy: made.strategy };
  return JSON.stringify(want) === JSON.stringify(have) ? [] : [{ rule: 'promote', message: `rollback of ${target.id} made ${made.id} as ${JSON.stringify(have)}, not ${JSON.stringify(want)}` }];
}

/**
 * A promote answered 200 (not handed to a walk) moved all traffic to its target, as the first
 * snapshot after it shows, unless a deploy that was on its way before it took the table since.
 */
export function promoteViolations(id: string, before: Snapshot, after: Snapshot): Violation[] {
  if (after.table.length === 1 && after.table[0]!.deploymentId === id && after.table[0]!.weight === 100) return [];
  const onWay = Object.entries(before.deployments).filter(([x, d]) => x !== id && ['pending', 'building', 'deploying', 'network'].includes(d.status));
  if (onWay.length > 0) return [];
  return [{ rule: 'promote', message: `${id} was promoted (200), yet the table is ${after.table.map((b) => `${b.deploymentId}:${b.weight}`).join(', ') || 'empty'}` }];
}

export function limitViolations(m: Model, s: Snapshot): Violation[] {
  const out: Violation[] = [];
  for (const d of m.deployments) {
    const failed = s.failedChecks[d.query] ?? 0;
    if (d.kind === 'rolling' || failed < d.failureLimit) continue;
    const at100 = weightOf(s, d.id) === 100;
    if (at100 || s.deployments[d.id]?.status === 'ready') {
      out.push({ rule: 'limit', message: `${d.id} (${d.kind}, failureLimit ${d.failureLimit}) had ${failed} failed checks yet is ${s.deployments[d.id]?.status}${at100 ? ' at 100%' : ''}` });
    }
  }
  return out;
}

export function desiredViolations(m: Model, s: Snapshot): Violation[] {
  const out: Violation[] = [];
  for (const d of m.deployments) {
    const real = s.deployments[d.id];
    if (!d.desired || !real) continue;
    if (d.desired.state === 'stopped' && real.desiredState !== 'stopped') {
      out.push({ rule: 'desired', message: `${d.id}: the last accepted command was stop, yet desired is ${real.desiredState}` });
    }
    // A later abort or a failing gate may stop it after a start; an earlier stop may not.
    if (d.desired.state === 'running' && real.desiredState === 'stopped' && /stopped by operator/.test(real.error ?? '') && !(d.abort && d.abort.at > d.desired.at)) {
      out.push({ rule: 'desired-overwritten', message: `${d.id}: a start was accepted last, yet the walk's rollback for an earlier stop left it ${real.status}, desired stopped` });
    }
    // Stopped with no reason after a start that changed it (issue 33, defect 6): only a walk that
    // began after the start may stop it so (a canary's switch or a blue-green's scale-down of its
    // stable); a blue-green's scale-down from before the start did it on main. A start of a
    // running deployment decided nothing (the first version of this rule blamed a canary's
    // switch on one: create(canary), start(#0)). A walk takes its stable when it begins, not when
    // it is created: one created while this one was still deploying after its start (the model
    // recorded no stable) may take it once ready, and rightly stop it on its switch; the walk's
    // own journaled choice says whether it did.
    const tookIt = (x: ModelDeployment) => x.stable === d.id || (s.walkStables?.[x.id] ?? []).includes(d.id);
    const replaced = m.deployments.some((x) => tookIt(x) && x.kind !== 'rolling' && x.createdAt > d.desired!.at);
    if (d.desired.state === 'running' && d.desired.changed !== false && real.desiredState === 'stopped' && real.status === 'stopped' && !real.error && !replaced) {
      out.push({ rule: 'desired-overwritten', message: `${d.id}: a start was accepted last and no walk began since, yet it is stopped` });
    }
  }
  return out;
}

/** Whether an accepted abort still binds: its stable was serving, and no stop/start was accepted
 *  after it (a start after an abort is the operator's newer decision: the deployment restarts). */
export const abortBinds = (d: ModelDeployment): boolean => !!d.abort?.stableServing && !(d.desired && d.desired.at > d.abort.at);

/** Abort rules that hold at every snapshot after the abort (the 5 s bound is abortSettled's). */
export function abortViolations(m: Model, s: Snapshot): Violation[] {
  const out: Violation[] = [];
  for (const d of m.deployments) {
    if (!d.abort || !abortBinds(d)) continue;
    const w = weightOf(s, d.id);
    if (w > d.abort.weightBefore) {
      out.push({ rule: d.abort.weightBefore === 0 ? 'abort-before-traffic' : 'abort', message: `${d.id} had ${d.abort.weightBefore}% when its abort was accepted and ${w}% after` });
    }
    if (s.deployments[d.id]?.status === 'ready') out.push({ rule: 'abort', message: `${d.id} ended ready although its abort was accepted` });
  }
  return out;
}

/** Whether an accepted abort has taken effect: rolled back, no share, the stable (if serving) at 100%. */
export function abortSettled(d: ModelDeployment, s: Snapshot): boolean {
  const status = s.deployments[d.id]?.status;
  if (status !== 'rolled_back' && status !== 'failed' && status !== 'stopped') return false;
  if (weightOf(s, d.id) > 0) return false;
  const st = d.stable ? s.deployments[d.stable] : undefined;
  const stableServes = st && st.status === 'ready' && st.desiredState === 'running';
  // A rolling deploy that became ready meanwhile (a rollback made just before the canary, say)
  // rightly took the environment from the stable: all traffic on serving others is settled too.
  // The long run found the model blaming the abort for it (rollback → create(canary) → abort).
  const servedByOthers = s.table.length > 0 && s.table.every((b) => b.deploymentId !== d.id && s.deployments[b.deploymentId]?.status === 'ready');
  return !stableServes || weightOf(s, d.stable!) === 100 || servedByOthers;
}

export function stableViolations(m: Model, s: Snapshot): Violation[] {
  const newest = m.deployments.at(-1);
  // Only the newest walk: a later deploy may legitimately replace the stable.
  if (!newest || newest.kind === 'rolling' || !newest.stable) return [];
  const real = s.deployments[newest.id];
  if (!real || TERMINAL.has(real.status)) return [];
  // The operator stopped or started it (a start restarts it): theirs to touch.
  if (m.deployments.find((d) => d.id === newest.stable)?.desired) return [];
  // An earlier canary or blue-green with the same stable switched meanwhile: stopping its old
  // stable was that walk's to do (the newest then walks against it, or fails its conflict
  // check). The long run found the model blaming a blue-green's scale-down on the newest walk.
  if (m.deployments.some((d) => d !== newest && d.kind !== 'rolling' && d.stable === newest.stable && s.deployments[d.id]?.status === 'ready')) return [];
  const st = s.deployments[newest.stable];
  if (st && (st.desiredState !== 'running' || st.status !== 'ready')) {
    return [{ rule: 'stable', message: `${newest.stable}, the stable of ${newest.id} (${real.status}), is ${st.status}, desired ${st.desiredState}, before the switch` }];
  }
  return [];
}

/** Offline: between two snapshots with a region offline throughout, no walk into it moved forward. */
export function offlineViolations(m: Model, before: Snapshot, after: Snapshot, offlineThroughout: readonly string[]): Violation[] {
  const out: Violation[] = [];
  const down = offlineThroughout.filter((r) => before.regionStatus[r] === 'offline' && after.regionStatus[r] === 'offline');
  if (down.length === 0) return out;
  for (const d of m.deployments) {
    if (d.kind === 'rolling' || !d.stable) continue;
    const [w0, w1] = [weightOf(before, d.id), weightOf(after, d.id)];
    if (w1 > w0) out.push({ rule: 'offline', message: `${d.id} moved from ${w0}% to ${w1}% while ${down.join(', ')} was offline` });
  }
  return out;
}

/** Every rule that a single snapshot can judge. */
export function snapshotViolations(m: Model, s: Snapshot, regions: readonly string[]): Violation[] {
  return [...trafficViolations(s, regions), ...limitViolations(m, s), ...desiredViolations(m, s), ...abortViolations(m, s), ...stableViolations(m, s), ...deletedViolations(m, s)];
}

/** Deployments not yet terminal or steady (the settle rule's subjects). */
export const unsettled = (m: Model, s: Snapshot): string[] => m.deployments.filter((d) => !TERMINAL.has(s.deployments[d.id]?.status ?? '')).map((d) => `${d.id} ${s.deployments[d.id]?.status}`);

/** Splits violations into those that fail the run and those of known defects (reported only). */
export function judged(vs: Violation[]): { failing: Violation[]; known: Violation[] } {
  if (STRICT_ENV) return { failing: vs, known: [] };
  if (STRICT) return { failing: vs.filter((v) => !OPEN_DEFECT_RULES.has(v.rule)), known: vs.filter((v) => OPEN_DEFECT_RULES.has(v.rule)) };
  return { failing: vs.filter((v) => !KNOWN_DEFECT_RULES.has(v.rule)), known: vs.filter((v) => KNOWN_DEFECT_RULES.has(v.rule)) };
}
