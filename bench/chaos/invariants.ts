// The harness's invariants as pure functions: observations in, violations out. The I/O that
// gathers the observations lives in observe.ts; run.ts decides when to look. The traffic rules
// are the lifecycle model's own module (tests/model/traffic-rules.ts), not a copy.
import { routesBreaks, showTable, tableBreaks, type BackendFacts, type Entry, type RoutedEntry } from '../../tests/model/traffic-rules';

export interface DesiredSpec {
  replicas: number;
  image: string;
  /** An autoscaled deployment (issue 33): `replicas` is its minimum, and any count up to this
   *  maximum is what its autoscaler may run. */
  maxReplicas?: number;
}

export interface Violation {
  kind: 'workflow-not-terminal' | 'workflow-failed' | 'deployment-failed' | 'not-converged' | 'wrong-deletion' | 'step-twice' | 'call-unanswered' | 'call-failed' | 'traffic';
  detail: Record<string, unknown>;
}

export interface StatusEvent {
  t: number;
  session: number;
  deploymentId: string;
  status: string;
  error: string | null;
}

/** Differences between what a region should run and what it runs; empty when equal. */
export function diffRegion(desired: ReadonlyMap<string, DesiredSpec>, actual: ReadonlyMap<string, DesiredSpec>): string[] {
  const out: string[] = [];
  for (const [key, want] of desired) {
    const have = actual.get(key);
    const replicasOk = (n: number) => (want.maxReplicas === undefined ? n === want.replicas : n >= want.replicas && n <= want.maxReplicas);
    if (!have) out.push(`${key}: missing`);
    else if (!replicasOk(have.replicas) || have.image !== want.image) {
      out.push(`${key}: has ${have.image}×${have.replicas}, wants ${want.image}×${want.replicas}${want.maxReplicas === undefined ? '' : `-${want.maxReplicas}`}`);
    }
  }
  for (const key of actual.keys()) if (!desired.has(key)) out.push(`${key}: not wanted but present`);
  return out;
}

/**
 * Statuses the deploy workflow writes once per run, each in its own database step. The same
 * one twice in a row for a deployment (with no other status between, on one LISTEN session,
 * so nothing was missed) means a step's transaction committed twice. `deploying` and `stopped`
 * are left out: the start and stop commands write them too, legitimately repeating the
 * workflow's own write.
 */
const ONCE_PER_RUN = new Set(['building', 'network', 'ready', 'failed']);

export function stepsTwice(events: readonly StatusEvent[]): Violation[] {
  const last = new Map<string, StatusEvent>();
  const out: Violation[] = [];
  for (const e of events) {
    const prev = last.get(e.deploymentId);
    if (prev && prev.session === e.session && prev.status === e.status && ONCE_PER_RUN.has(e.status)) {
      out.push({ kind: 'step-twice', detail: { deploymentId: e.deploymentId, status: e.status, firstAt: new Date(prev.t).toISOString(), againAt: new Date(e.t).toISOString() } });
    }
    last.set(e.deploymentId, e);
  }
  return out;
}

export interface Deletion {
  region: string;
  t: number;
  kind: string;
  name: string;
  cause: string;
  labels: Record<string, string>;
}

/** Kinds krane creates per resource; pods and events go with them and are not judged alone. */
const JUDGED_KINDS = new Set(['StatefulSet', 'Service', 'Deployment', 'PodDisruptionBudget']);

/** The desired-state resource a managed object belongs to, as observe.ts keys it. */
export function resourceKey(labels: Record<string, string>): string | undefined {
  if (labels['app.kubernetes.io/managed-by'] !== 'krane') return undefined;
  const dep = labels['unkey.com/deployment.id'];
  if (dep && labels['app.kubernetes.io/component'] === 'deployment') return `deployment/${dep}`;
  const sen = labels['unkey.com/sentinel.id'];
  if (sen && labels['app.kubernetes.io/component'] === 'sentinel') return `sentinel/${sen}`;
  return undefined;
}

export interface WantedSample {
  t: number;
  wanted: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
}

/**
 * A deletion is wrong when desired state wanted the object's resource both in the last sample
 * before it and in the first sample after it, and the workload changed nothing about that
 * resource in between (a stop and start inside one sampling gap would otherwise look the same).
 * Only krane's own requests are judged: cascades and controllers follow from those.
 */
export function wrongDeletions(deletions: readonly Deletion[], samples: readonly WantedSample[], touched: (key: string, from: number, to: number) => boolean): Violation[] {
  const out: Violation[] = [];
  for (const d of deletions) {
    if (d.cause !== 'request' && d.cause !== 'collection') continue;
    if (!JUDGED_KINDS.has(d.kind)) continue;
    const key = resourceKey(d.labels);
    if (!key) continue;
    const before = lastBefore(samples, d.t);
    const after = samples.find((s) => s.t > d.t);
    if (!before || !after) continue;
    const wanted = (s: WantedSample) => s.wanted.get(d.region)?.has(key) ?? false;
    if (wanted(before) && wanted(after) && !touched(key, before.t, after.t)) {
      out.push({
        kind: 'wrong-deletion',
        detail: { region: d.region, resource: key, object: `${d.kind}/${d.name}`, at: new Date(d.t).toISOString(), cause: d.cause, wantedAt: [new Date(before.t).toISOString(), new Date(after.t).toISOString()] },
      });
    }
  }
  return out;
}

function lastBefore(samples: readonly WantedSample[], t: number): WantedSample | undefined {
  let found: WantedSample | undefined;
  for (const s of samples) {
    if (s.t >= t) break;
    found = s;
  }
  return found;
}

/** One backend of an environment's routing table, with what the database says of its deployment
 *  at the same instant (one statement): state, and running instances per region it runs in. */
export interface TrafficRow {
  environmentId: string;
  deploymentId: string;
  weight: number;
  /** Null when no such deployment exists. */
  status: string | null;
  desiredState: string | null;
  /** The deployment's own environment (null when it does not exist). */
  deploymentEnvironmentId?: string | null;
  /** Regions of the deployment's running topology, each with its running instance rows. */
  running: Record<string, number>;
}

/**
 * The traffic rules (issues 23 and 33), per sample, as the lifecycle model judges them (one
 * module states them: tests/model/traffic-rules.ts): weights sum to 100 or the table is empty,
 * every entry names a deployment of the environment, none is stopped, failed or rolled back, and
 * one with a share has a running instance in every region it runs in. Violations carry the
 * sample time.
 */
export function trafficViolations(t: number, rows: readonly TrafficRow[]): Violation[] {
  const byEnv = new Map<string, TrafficRow[]>();
  for (const r of rows) byEnv.set(r.environmentId, [...(byEnv.get(r.environmentId) ?? []), r]);
  const at = new Date(t).toISOString();
  const out: Violation[] = [];
  for (const [environmentId, table] of byEnv) {
    const facts = (id: string): BackendFacts | undefined => {
      const r = table.find((x) => x.deploymentId === id);
      if (!r || r.status === null || r.desiredState === null) return undefined;
      return { environmentId: r.deploymentEnvironmentId ?? environmentId, status: r.status, desiredState: r.desiredState, ready: r.running };
    };
    for (const b of tableBreaks(environmentId, table, facts)) {
      out.push({ kind: 'traffic', detail: { at, environmentId, rule: b.rule, ...(b.deploymentId ? { deploymentId: b.deploymentId } : {}), message: b.message, table: showTable(table) } });
    }
  }
  return out;
}

/**
 * A region's routes against desired state and its pods: a ConfigMap for exactly the tables that
 * apply there, with the table's weights, each entry with a share addressing exactly its ready
 * pods (an autoscaler's included). Empty when they agree; judged once faults healed.
 */
export function diffRoutes(desired: ReadonlyMap<string, readonly Entry[]>, actual: ReadonlyMap<string, readonly RoutedEntry[]>, readyAddresses: (deploymentId: string) => readonly string[], region: string): string[] {
  const out: string[] = [];
  for (const [env, table] of desired) {
    const have = actual.get(env);
    if (!have) out.push(`routes/${env}: missing, wants ${showTable(table)}`);
    else if (showTable(have) !== showTable(table)) out.push(`routes/${env}: has ${showTable(have)}, wants ${showTable(table)}`);
    else out.push(...routesBreaks(region, have, readyAddresses).map((b) => `routes/${env}: ${b.message}`));
  }
  for (const env of actual.keys()) if (!desired.has(env)) out.push(`routes/${env}: not wanted but present`);
  return out;
}

/** p-th percentile (nearest rank) of a list of numbers; undefined for an empty list. */
export function percentile(xs: readonly number[], p: number): number | undefined {
  if (xs.length === 0) return undefined;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
