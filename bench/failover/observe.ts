// What bench:failover watches: the deployments its calls made, whether they reached a final
// state, and whether both regions run what the database says for them (the chaos harness's
// readers of desired and actual state, restricted to those deployments).
import type postgres from 'postgres';
import type { StackHandle } from '../../src/modes/stack';
import { diffRegion } from '../chaos/invariants';
import { readActual, readDesired } from '../chaos/observe';

export interface Accepted {
  id: string;
  /** When the call (its first try) was sent and when ctrl accepted it. */
  sentAt: number;
  acceptedAt: number;
}

export interface Lane {
  accepted: Accepted[];
  /** Calls that gave up (the CLI's retry budget ran out or ctrl refused). */
  callsFailed: number;
  canaries: string[];
}

export const FINAL = ['ready', 'failed', 'rolled_back', 'superseded', 'stopped'];
/** Polling period of the convergence watches: fine enough for the figures, light on the database. */
const POLL_MS = 250;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Why the deployments in `ids` are not yet converged (one not final, a region differing), or null when every one is final and runs (or not) in every region as the database says. */
async function notConverged(sql: postgres.Sql, stack: StackHandle, ids: string[]): Promise<string | null> {
  if (ids.length === 0) return null;
  const open = await sql<{ id: string; status: string }[]>`SELECT id, status FROM deployments WHERE id = ANY(${ids}::text[]) AND status <> ALL(${FINAL}::text[]) LIMIT 3`;
  if (open.length > 0) return `not final: ${open.map((r) => `${r.id} ${r.status}`).join(', ')}`;
  const keys = new Set(ids.map((id) => `deployment/${id}`));
  const only = <V>(m: ReadonlyMap<string, V>) => new Map([...m].filter(([k]) => keys.has(k)));
  const desired = await readDesired(sql);
  for (const [name, r] of stack.regions) {
    const d = diffRegion(only(desired.get(name) ?? new Map()), only(await readActual(r.sim.url)));
    if (d.length) return `${name}: ${d.slice(0, 3).join('; ')}`;
  }
  return null;
}

/**
 * From `since` (a fault) until `deadline`: ms until every deployment accepted before the fault
 * was final and converged, or null. Starts at once; a failed read (the database away) is a miss.
 */
export async function watchConverged(sql: postgres.Sql, stack: StackHandle, lane: Lane, since: number, deadline: number, log: (line: string) => void = () => {}): Promise<number | null> {
  const ids = lane.accepted.filter((a) => a.acceptedAt < since).map((a) => a.id);
  let why = 'not checked';
  while (Date.now() < deadline) {
    try {
      const w = await notConverged(sql, stack, ids);
      if (w === null) return Date.now() - since;
      why = w;
    } catch (e) {
      why = `read failed: ${(e as Error).message}`; // the database is away: not converged yet
    }
    await sleep(POLL_MS);
  }
  log(`not converged by the deadline: ${why}`);
  return null;
}

/** Waits (to `deadline`) until every accepted deployment is final and no workflow runs; returns the statuses. */
export async function settle(sql: postgres.Sql, _stack: StackHandle, lane: Lane, deadline: number): Promise<{ byStatus: Record<string, number>; canaries: Record<string, number> }> {
  const ids = lane.accepted.map((a) => a.id);
  for (;;) {
    const [r] = await sql<{ open: number; running: number }[]>`
      SELECT (SELECT count(*)::int FROM deployments WHERE id = ANY(${ids}::text[]) AND status <> ALL(${FINAL}::text[])) AS open,
             (SELECT count(*)::int FROM engine_invocations WHERE status NOT IN ('completed', 'failed', 'cancelled')) AS running`;
    if ((r!.open === 0 && r!.running === 0) || Date.now() > deadline) break;
    await sleep(POLL_MS);
  }
  const count = async (of: string[]) => {
    const rows = await sql<{ status: string; n: number }[]>`SELECT status, count(*)::int AS n FROM deployments WHERE id = ANY(${of}::text[]) GROUP BY status`;
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  };
  return { byStatus: await count(ids), canaries: await count(lane.canaries) };
}
