// The deployment lifecycle as a small pure model (issue 23): what the operator did and what must
// therefore be true of the real system, whatever order the workflows, kranes and ctrl replicas
// happened to run in. It predicts no exact state (timing decides, for example, whether a canary
// completed before an abort reached it); it keeps what was accepted (creates, stop/start,
// aborts, promotes), what the environment was doing (metric, offline regions), and judges each
// snapshot of the real system against the rules. No I/O here: the driver (driver.ts) takes the
// snapshots, the commands (commands.ts) feed both sides.
//
// The rules (issue 23's semantics, DESIGN section 11):
//   traffic   weights sum to 100 (or the table is empty) and never name a deployment that is
//             stopped, failed or rolled back; a share above 0 only for one ready in every region
//   limit     a deployment whose failed checks reached failureLimit (over its whole analysis)
//             never has 100% and never ends ready
//   desired   the last accepted stop/start decides the desired state, whatever a walk was doing
//   abort     an accepted abort ends the deployment rolled back with no share, and the stable
//             (still serving) back on 100%, within ABORT_MS; a canary aborted before it had any
//             share never gets one
//   stable    the stable of a canary or blue-green stays running and ready until the switch
//   offline   no walk moves traffic forward while one of its regions is offline
//   settle    every deployment reaches a terminal or steady state within a bound

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

/** The bound: an accepted abort puts all traffic back on the stable within 5 s. */
export const ABORT_MS = 5_000;

export type Kind = 'rolling' | 'canary' | 'blue-green';
export type Metric = 'good' | 'bad' | 'absent';
export const TERMINAL = new Set(['ready', 'stopped', 'failed', 'rolled_back']);
const NO_TRAFFIC = new Set(['stopped', 'failed', 'rolled_back']);

export interface ModelDeployment {
  id: string;
  /** Position in the sequence's creates (for messages and the "newest" rule). */
  n: number;
  kind: Kind;
  failureLimit: number;
  /** The analysis query, unique per deployment, so the stand-in counts its failed checks. */
  query: string;
  /** The deployment serving 100% when this one was created (what an abort returns to). */
  stable: string | null;
  /** The last accepted stop/start and the command number it was accepted at. */
  desired: { state: 'running' | 'stopped'; at: number } | null;
  /** Command number of an accepted abort, the share the deployment had just before it, and
   *  whether its stable was serving then (without one a canary is a rolling deploy: an abort
   *  has nothing to return to, and the rules below do not judge it). */
  abort: { at: number; weightBefore: number; stableServing: boolean } | null;
}

export interface Model {
  /** Commands run so far (stamps "accepted at"). */
  at: number;
  deployments: ModelDeployment[];
  metric: Metric;
  offline: string[];
}

export const initialModel = (): Model => ({ at: 0, deployments: [], metric: 'good', offline: [] });

/** What the driver reads of the real system, all in one database snapshot except the pods. */
export interface Snapshot {
  table: { deploymentId: string; weight: number }[];
  deployments: Record<string, { status: string; desiredState: string; error: string | null }>;
  /** Ready pods per deployment per region, read from each region's simulator. */
  readyPods: Record<string, Record<string, number>>;
  /** Failed checks the stand-in Prometheus answered, per query. */
  failedChecks: Record<string, number>;
  regionStatus: Record<string, string>;
}

export interface Violation {
  rule: string;
  message: string;
}

// ---- model updates (each returns a new model) ----

export const tick = (m: Model): Model => ({ ...m, at: m.at + 1 });

export function created(m: Model, d: Omit<ModelDeployment, 'desired' | 'abort' | 'n'>): Model {
  return { ...m, deployments: [...m.deployments, { ...d, n: m.deployments.length, desired: null, abort: null }] };
}

const update = (m: Model, id: string, f: (d: ModelDeployment) => ModelDeployment): Model => ({
  ...m,
  deployments: m.deployments.map((d) => (d.id === id ? f(d) : d)),
});

export const desiredAccepted = (m: Model, id: string, state: 'running' | 'stopped'): Model => update(m, id, (d) => ({ ...d, desired: { state, at: m.at } }));

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

export function trafficViolations(s: Snapshot, regions: readonly string[]): Violation[] {
  const out: Violation[] = [];
  const sum = s.table.reduce((n, b) => n + b.weight, 0);
  if (s.table.length > 0 && sum !== 100) out.push({ rule: 'traffic', message: `weights sum to ${sum}: ${show(s.table)}` });
  for (const b of s.table) {
    const d = s.deployments[b.deploymentId];
    if (!d) continue; // another environment's deployment cannot be here; the table is per environment
    if (d.desiredState !== 'running' || NO_TRAFFIC.has(d.status)) {
      out.push({ rule: 'traffic', message: `${b.deploymentId} (${d.status}, desired ${d.desiredState}) is in the table: ${show(s.table)}` });
    } else if (b.weight > 0) {
      const missing = regions.filter((r) => (s.readyPods[b.deploymentId]?.[r] ?? 0) < 1);
      if (missing.length) out.push({ rule: 'traffic', message: `${b.deploymentId} has ${b.weight}% but no ready pod in ${missing.join(', ')}` });
    }
  }
  return out;
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
  return [...trafficViolations(s, regions), ...limitViolations(m, s), ...desiredViolations(m, s), ...abortViolations(m, s), ...stableViolations(m, s)];
}

/** Deployments not yet terminal or steady (the settle rule's subjects). */
export const unsettled = (m: Model, s: Snapshot): string[] => m.deployments.filter((d) => !TERMINAL.has(s.deployments[d.id]?.status ?? '')).map((d) => `${d.id} ${s.deployments[d.id]?.status}`);

/** Splits violations into those that fail the run and those of known defects (reported only). */
export function judged(vs: Violation[]): { failing: Violation[]; known: Violation[] } {
  if (STRICT_ENV) return { failing: vs, known: [] };
  if (STRICT) return { failing: vs.filter((v) => !OPEN_DEFECT_RULES.has(v.rule)), known: vs.filter((v) => OPEN_DEFECT_RULES.has(v.rule)) };
  return { failing: vs.filter((v) => !KNOWN_DEFECT_RULES.has(v.rule)), known: vs.filter((v) => KNOWN_DEFECT_RULES.has(v.rule)) };
}

const show = (t: { deploymentId: string; weight: number }[]) => t.map((b) => `${b.deploymentId}:${b.weight}`).join(', ') || 'empty';
