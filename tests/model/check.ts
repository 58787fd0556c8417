// What every model command shares (commands.ts, commands-environment.ts): the box fast-check
// hands them, the rules checked after each, and the check of an answer against the model's
// prediction (predict.ts).
import type fc from 'fast-check';
import * as M from './lifecycle-model';
import * as P from './predict';
import { REGIONS, type Answer, type Driver } from './driver';

/** fast-check's model: the pure model in a box (fast-check hands the same object to each command). */
export interface Box {
  m: M.Model;
  /** The snapshot after the previous command and the regions offline then (the offline rule). */
  prev: { snap: M.Snapshot; offline: string[] } | null;
  /** Violations of known defects seen (reported, not failed, while KNOWN_DEFECTS_FIXED is false). */
  known: M.Violation[];
  /** Distinguishes the analysis queries of all sequences. */
  queries: { next: number };
}

export type Cmd = fc.AsyncCommand<Box, Driver>;

/** Checks every rule on a fresh snapshot; throws with the failing ones. Returns the snapshot. */
export async function checkRules(box: Box, d: Driver, extra: M.Violation[] = []): Promise<M.Snapshot> {
  const snap = await d.snapshot(box.m);
  const offlineThroughout = box.prev ? box.prev.offline.filter((r) => box.m.offline.includes(r)) : [];
  const vs = [...extra, ...M.snapshotViolations(box.m, snap, REGIONS), ...(box.prev ? M.offlineViolations(box.m, box.prev.snap, snap, offlineThroughout) : [])];
  const { failing, known } = M.judged(vs);
  for (const k of known) if (!box.known.some((x) => x.rule === k.rule && x.message === k.message)) box.known.push(k);
  box.prev = { snap, offline: [...box.m.offline] };
  if (failing.length) throw new Error(`rules broken:\n${failing.map((v) => `  [${v.rule}] ${v.message}`).join('\n')}`);
  return snap;
}

/**
 * The answer's violation, if it is not one the model predicted (a 5xx never is). Throws on a
 * 5xx at once: no rule can be judged after a server error.
 */
export function unexpected(what: string, allowed: ReadonlySet<P.Outcome>, a: Answer): M.Violation[] {
  if (a.status >= 500) throw new Error(`${what} answered ${a.status}: ${JSON.stringify(a.body)}`);
  const got = P.outcomeOf(a);
  return allowed.has(got) ? [] : [{ rule: 'answer', message: `${what} answered ${got} (${a.body?.error?.message ?? 'no error'}); the model predicts ${[...allowed].join(' or ')}` }];
}

export const target = (box: Box, i: number) => box.m.deployments[i % box.m.deployments.length]!;
export const hasDeployments = (box: Box) => box.m.deployments.length > 0;
export const accepted = (a: Answer) => a.status < 300;
