// What the model predicts each operator command answers (issue 33: a 4xx is accepted only where
// the model predicts it). Pure: the model and the snapshots taken just before and just after the
// call in, the acceptable answers out. A command lands somewhere between the two snapshots, so
// its answer may follow either (a walk that completes meanwhile, a quarantine committed
// meanwhile): the prediction is the union of what each would have answered. Every condition
// here is the API's rule as the model states it, not read back from the answer.
import type { Model, ModelDeployment, Snapshot } from './lifecycle-model';

/** `status` or `status:ERR_CODE`; 2xx answers carry no code. */
export type Outcome = string;

export const ON_WAY: ReadonlySet<string> = new Set(['pending', 'building', 'deploying', 'network']);

/** What one answer was, in the form predictions use. */
export function outcomeOf(a: { status: number; body: any }): Outcome {
  return a.status < 300 ? String(a.status) : `${a.status}:${a.body?.error?.code ?? '?'}`;
}

const statusIn = (s: Snapshot, id: string) => s.deployments[id]?.status ?? 'missing';

/** A canary or blue-green that still takes a promote or abort (store: requestTrafficCommand). */
export function walking(d: ModelDeployment, s: Snapshot): boolean {
  return d.kind !== 'rolling' && !d.generationMoved && ON_WAY.has(statusIn(s, d.id));
}

const union = (f: (s: Snapshot) => Outcome, before: Snapshot, after: Snapshot) => new Set([f(before), f(after)]);
const quarantined = (s: Snapshot, image: string) => (s.quarantined ?? []).includes(image);

export function expectCreate(m: Model, image: string, before: Snapshot, after: Snapshot): Set<Outcome> {
  if (m.deleted) return new Set(['400:ERR_VALIDATION_INVALID']);
  return union((s) => (quarantined(s, image) ? '409:ERR_IMAGE_QUARANTINED' : '202'), before, after);
}

/** A rollback is a create of the target's spec and image (rolling). */
export const expectRollback = (m: Model, d: ModelDeployment, before: Snapshot, after: Snapshot) => expectCreate(m, d.image, before, after);

export function expectStart(m: Model, d: ModelDeployment, before: Snapshot, after: Snapshot): Set<Outcome> {
  if (m.deleted) return new Set(['409:ERR_DEPLOYMENT_STATE_CONFLICT']);
  return union((s) => {
    const status = statusIn(s, d.id);
    if (status === 'failed') return '409:ERR_DEPLOYMENT_STATE_CONFLICT';
    // A rolled-back canary's quarantined image is not started again (desired-state.ts).
    if (status === 'rolled_back' && quarantined(s, d.image) && s.deployments[d.id]?.desiredState === 'stopped') return '409:ERR_DEPLOYMENT_STATE_CONFLICT';
    return '200';
  }, before, after);
}

export const expectStop = (): Set<Outcome> => new Set(['200']);

export function expectAbort(d: ModelDeployment, before: Snapshot, after: Snapshot): Set<Outcome> {
  return union((s) => (walking(d, s) ? '202' : '409:ERR_DEPLOYMENT_STATE_CONFLICT'), before, after);
}

/**
 * A promote: a walk takes it as a command (200, promoting); a ready deployment is promoted (200)
 * unless a region it runs in is offline (409); anything else is not ready (409). Whether ctrl
 * has noticed a region offline follows its liveness, not the moment krane stopped: where the
 * snapshots and the kranes disagree, either answer is the model's.
 */
export function expectPromote(m: Model, d: ModelDeployment, regions: readonly string[], before: Snapshot, after: Snapshot): Set<Outcome> {
  const out = new Set<Outcome>();
  for (const s of [before, after]) {
    if (walking(d, s)) out.add('200');
    else if (statusIn(s, d.id) !== 'ready') out.add('409:ERR_DEPLOYMENT_NOT_READY');
    else {
      const seen = regions.map((r) => regionCertainty(m, r, before, after));
      if (seen.every((x) => x !== 'offline')) out.add('200');
      if (seen.some((x) => x !== 'online')) out.add('409:ERR_PROMOTE_REGION_OFFLINE');
    }
  }
  return out;
}

/**
 * How certain the model is of a region's liveness across a call: `online` when both snapshots
 * saw it online with a sign of life well inside the offline threshold (`ONLINE_MARGIN_MS`) and
 * its krane runs, `offline` when both saw it offline with its krane down, else `unsure`.
 */
export function regionCertainty(m: Model, region: string, before: Snapshot, after: Snapshot): 'online' | 'offline' | 'unsure' {
  const online = (s: Snapshot) => s.regionStatus[region] === 'online' && (s.regionAgeMs?.[region] ?? 0) < ONLINE_MARGIN_MS;
  if (!m.offline.includes(region) && online(before) && online(after)) return 'online';
  if (m.offline.includes(region) && before.regionStatus[region] !== 'online' && after.regionStatus[region] !== 'online') return 'offline';
  return 'unsure';
}

/** Half the model's --agent-offline-after (1 s, driver.ts): a region seen this recently stays
 *  online for the length of a call. */
export const ONLINE_MARGIN_MS = 500;

/** Whether anything of the environment still runs, so a deletion is refused (tenancy.runningIn). */
export function busy(m: Model, s: Snapshot): boolean {
  if ((s.sentinelsProgressing ?? 0) > 0) return true;
  return m.deployments.some((d) => {
    const r = s.deployments[d.id];
    if (!r) return false;
    return r.topologyRunning === true || (r.desiredState === 'running' && !['failed', 'stopped', 'superseded', 'rolled_back'].includes(r.status));
  });
}

export function expectDeleteEnvironment(m: Model, before: Snapshot, after: Snapshot): Set<Outcome> {
  if (m.deleted) return new Set(['404:ERR_NOT_FOUND']);
  return union((s) => (busy(m, s) ? '409:ERR_TENANCY_BUSY' : '200'), before, after);
}
