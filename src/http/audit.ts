// The audit trail of the HTTP API. Two writers, one row per call:
//
// - A handler whose call changes something writes the row itself, in the change's own
//   transaction (`auditInTx`, or the engine's start transaction through `alongside`), with
//   outcome `ok`: the change and its row commit together or not at all.
// - Every other call that must leave a row gets it from the onSend hook (`auditHook`), which
//   runs before the answer leaves: refused attempts (401/403: `denied`; 429: `limited`), bad
//   input (400: `invalid`), calls that failed (`failed`), an agent's refused reports (400 too),
//   and mutating calls that had no transaction of their own (an invocation cancel). A call whose
//   row was written in its transaction but whose answer is an error after all (the workflow it
//   started refused the change) has that row's outcome set to `failed`, so it still has one row.
// - Rows the hook writes for refusals are budgeted per actor (a key, an agent token, an address
//   for callers without a known credential) and per group (the key's workspace, all agents, all
//   anonymous callers): RefusalAuditBudget. Past it a refusal is counted, not written, so no
//   caller can grow the table at the rate it sends. The admin token is not budgeted.
//
// Rows hold an action name, a target id and the actor's id: never request content, tokens, env
// values or webhook URLs. A row the hook cannot write (the database is away) is logged, not
// retried: the call's answer does not wait for the audit of a refusal.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { audit, type Queryable, type TxSql } from '../store';
import type { AuditOutcome, AuditScope, NewAuditRow } from '../store/audit';
import { currentTraceparent, traceIdOf } from '../tracing';
import type { KeyScope, Principal, RouteAccess } from './permissions';

declare module 'fastify' {
  interface FastifyRequest {
    /** The public API's caller, set by its guard (src/http/api/guard.ts). */
    principal?: Principal;
    /** The audit row this call wrote in its own transaction. */
    auditRowId?: string;
    /** A key the guard knew but refused (revoked, expired): its refusal is the key's. */
    refusedKey?: { id: string; scope: KeyScope };
  }
  interface FastifyContextConfig extends RouteAccess {}
}

export interface AuditTarget extends Partial<AuditScope> {
  /** Id of what the call acted on (a deployment, an environment, a key). */
  id: string | null;
}

function actorOf(req: FastifyRequest): Pick<NewAuditRow, 'actorType' | 'actorId'> {
  const p = req.principal;
  if (p?.type === 'admin') return { actorType: 'admin', actorId: 'admin' };
  if (p?.type === 'key') return { actorType: 'key', actorId: p.id };
  if (req.refusedKey) return { actorType: 'key', actorId: req.refusedKey.id };
  if (req.agentTokenId) return { actorType: 'agent', actorId: req.agentTokenId };
  return { actorType: 'anonymous', actorId: null };
}

function actionOf(req: FastifyRequest): string {
  return req.routeOptions.config?.action ?? `${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]}`.slice(0, 200);
}

function rowOf(req: FastifyRequest, target: AuditTarget, outcome: AuditOutcome, action = actionOf(req)): NewAuditRow {
  // A refused key's row lands in the key's own scope, so its workspace's auditors see it.
  const own = req.principal?.type === 'key' ? req.principal.scope : (req.refusedKey?.scope ?? null);
  const traceparent = currentTraceparent() ?? (typeof req.headers.traceparent === 'string' ? req.headers.traceparent : null);
  return {
    ...actorOf(req),
    action,
    target: target.id,
    outcome,
    requestId: String(req.id),
    traceId: traceIdOf(traceparent),
    sourceIp: req.ip ?? null,
    workspaceId: target.workspaceId ?? own?.workspaceId ?? null,
    projectId: target.projectId ?? (target.workspaceId ? null : own?.projectId ?? null),
    environmentId: target.environmentId ?? (target.workspaceId ? null : own?.environmentId ?? null),
  };
}

/** Writes the call's `ok` row in the change's transaction; the hook then writes none. */
export async function auditInTx(tx: TxSql | Queryable, req: FastifyRequest, target: AuditTarget, action?: string): Promise<void> {
  req.auditRowId = await audit.insertAudit(tx, rowOf(req, target, 'ok', action));
}

/** The same, shaped for the engine's `alongside` and the commands' record callbacks. */
export const auditAlongside = (req: FastifyRequest) => (tx: TxSql, target: AuditTarget) => auditInTx(tx, req, target);

function outcomeOf(status: number): AuditOutcome {
  if (status === 429) return 'limited';
  if (status === 401 || status === 403) return 'denied';
  if (status === 400 || status === 422) return 'invalid';
  return status < 400 ? 'ok' : 'failed';
}

function targetOf(req: FastifyRequest): AuditTarget {
  const id = (req.params as { id?: unknown } | undefined)?.id;
  return { id: typeof id === 'string' ? id.slice(0, 256) : null };
}

/** Refusals the hook records on any route, whatever the call. */
const REFUSED = new Set([401, 403, 429]);
/** An agent's reports refused as malformed are refusals too: a krane that sends them is broken
 *  or not krane, and an operator should see which token did. */
const AGENT_REFUSED = new Set([400, 413, 422]);

/** The budget's names for who refused calls belong to, and the group that shares a budget. */
function budgetKeysOf(req: FastifyRequest): { actor: string; group: string } | null {
  const p = req.principal;
  if (p?.type === 'admin') return null;
  if (p?.type === 'key') return { actor: `key:${p.id}`, group: `ws:${p.scope.workspaceId}` };
  if (req.refusedKey) return { actor: `key:${req.refusedKey.id}`, group: `ws:${req.refusedKey.scope.workspaceId}` };
  if (req.agentTokenId) return { actor: `agent:${req.agentTokenId}`, group: 'agents' };
  return { actor: `anon:${req.ip ?? 'unknown'}`, group: 'anonymous' };
}

/**
 * How many refusal rows one actor (a key, an agent token, a source address) may write a minute,
 * and one group (a workspace's keys, all agents, all anonymous callers) together. Rows are kept
 * for the whole retention, so one row per refused call let anyone who can reach the port (or hold
 * any key) grow the table at will, at a database insert per request. Ten a minute per actor is
 * more than a person or a script that was misconfigured makes worth reading; 200 per group keeps
 * a workspace that mints many keys, or a spray of addresses, to the same bound. Past the budget a
 * refusal is only counted (the HTTP metrics count every answer too) and summed up in one log line
 * a minute. `dropped.actors` is counted up to MAX_DROPPED_ACTORS.
 */
const MAX_DROPPED_ACTORS = 10_000;

export class RefusalAuditBudget {
  private window = 0;
  private readonly used = new Map<string, number>();
  /** Refusals not written in the current window, and from how many actors. */
  dropped = { calls: 0, actors: new Set<string>() };

  constructor(private readonly limits = { perActor: 10, perGroup: 200 }) {}

  /** Whether a row may be written for a refusal of `actor` (in `group`) at `now` (ms). */
  take(actor: string, group: string, now: number): boolean {
    const window = Math.floor(now / 60_000);
    if (window !== this.window) {
      this.window = window;
      this.used.clear();
    }
    const a = this.used.get(actor) ?? 0;
    const g = this.used.get(`g/${group}`) ?? 0;
    if (a >= this.limits.perActor || g >= this.limits.perGroup) {
      this.dropped.calls++;
      // Counted up to a cap: a flood from many addresses must not grow this set without end.
      if (this.dropped.actors.size < MAX_DROPPED_ACTORS) this.dropped.actors.add(actor);
      return false;
    }
    this.used.set(actor, a + 1);
    this.used.set(`g/${group}`, g + 1);
    return true;
  }

  /** The dropped count so far, reset (for the minute's log line); null when none. */
  drain(): { calls: number; actors: number } | null {
    if (this.dropped.calls === 0) return null;
    const out = { calls: this.dropped.calls, actors: this.dropped.actors.size };
    this.dropped = { calls: 0, actors: new Set() };
    return out;
  }
}

/** Whether the hook writes a row for this call: a mutating call, or a refusal. */
function recorded(req: FastifyRequest, status: number): boolean {
  if (req.routeOptions.config?.action !== undefined || REFUSED.has(status)) return true;
  return req.agentTokenId !== undefined && AGENT_REFUSED.has(status);
}

/** onSend on the whole app: the row of every call its handler did not record. */
export function auditHook(app: FastifyInstance, sql: Queryable, budget = new RefusalAuditBudget()): void {
  const summary = setInterval(() => {
    const d = budget.drain();
    if (d) app.log.warn(d, 'refused calls past the audit budget: counted, not written to the audit log');
  }, 60_000);
  summary.unref();
  app.addHook('onClose', async () => clearInterval(summary));
  app.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply) => {
    const status = reply.statusCode;
    if (!recorded(req, status)) return;
    const who = status >= 400 && !req.auditRowId ? budgetKeysOf(req) : null;
    if (who && !budget.take(who.actor, who.group, Date.now())) return;
    try {
      if (req.auditRowId) {
        if (status >= 400) await audit.setOutcome(sql, req.auditRowId, outcomeOf(status));
        return;
      }
      await audit.insertAudit(sql, rowOf(req, targetOf(req), outcomeOf(status)));
    } catch (err) {
      req.log.warn({ err, requestId: req.id }, 'audit row could not be written');
    }
  });
}
