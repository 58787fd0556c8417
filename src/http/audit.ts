// The audit trail of the HTTP API. Two writers, one row per call:
//
// - A handler whose call changes something writes the row itself, in the change's own
//   transaction (`auditInTx`, or the engine's start transaction through `alongside`), with
//   outcome `ok`: the change and its row commit together or not at all.
// - Every other call that must leave a row gets it from the onSend hook (`auditHook`), which
//   runs before the answer leaves: refused attempts (401/403: `denied`), bad input (400:
//   `invalid`), calls that failed (`failed`) and mutating calls that had no transaction of their
//   own (an invocation cancel). A call whose row was written in its transaction but whose answer
//   is an error after all (the workflow it started refused the change) has that row's outcome
//   set to `failed`, so it still has one row.
//
// Rows hold an action name, a target id and the actor's id: never request content, tokens, env
// values or webhook URLs. A row the hook cannot write (the database is away) is logged, not
// retried: the call's answer does not wait for the audit of a refusal.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { audit, type Queryable, type TxSql } from '../store';
import type { AuditOutcome, AuditScope, NewAuditRow } from '../store/audit';
import { currentTraceparent, traceIdOf } from '../tracing';
import type { Principal, RouteAccess } from './permissions';

declare module 'fastify' {
  interface FastifyRequest {
    /** The public API's caller, set by its guard (src/http/api/guard.ts). */
    principal?: Principal;
    /** The audit row this call wrote in its own transaction. */
    auditRowId?: string;
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
  if (req.agentTokenId) return { actorType: 'agent', actorId: req.agentTokenId };
  return { actorType: 'anonymous', actorId: null };
}

function actionOf(req: FastifyRequest): string {
  return req.routeOptions.config?.action ?? `${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]}`.slice(0, 200);
}

function rowOf(req: FastifyRequest, target: AuditTarget, outcome: AuditOutcome, action = actionOf(req)): NewAuditRow {
  // A refused key's row lands in the key's own scope, so its workspace's auditors see it.
  const own = req.principal?.type === 'key' ? req.principal.scope : null;
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
  if (status === 401 || status === 403 || status === 429) return 'denied';
  if (status === 400 || status === 422) return 'invalid';
  return status < 400 ? 'ok' : 'failed';
}

function targetOf(req: FastifyRequest): AuditTarget {
  const id = (req.params as { id?: unknown } | undefined)?.id;
  return { id: typeof id === 'string' ? id.slice(0, 256) : null };
}

/**
 * How many rows callers without a known credential may write: each source address `perSource`
 * a minute, all of them together `total`. Rows are kept for the whole retention, so one row per
 * refused anonymous call let anyone who can reach the port grow the table at will, at a
 * database insert per request. Past the budget a refusal is only counted (the HTTP metrics count
 * every 401 too) and summed up in one log line a minute.
 */
const MAX_DROPPED_SOURCES = 10_000;

export class AnonymousAuditBudget {
  private window = 0;
  private readonly used = new Map<string, number>();
  private total = 0;
  /** Refusals not written in the current window, and from how many sources. */
  dropped = { calls: 0, sources: new Set<string>() };

  constructor(private readonly limits = { perSource: 10, total: 200 }) {}

  /** Whether a row may be written for an anonymous refusal from `source` at `now` (ms). */
  take(source: string, now: number): boolean {
    const window = Math.floor(now / 60_000);
    if (window !== this.window) {
      this.window = window;
      this.used.clear();
      this.total = 0;
    }
    const n = this.used.get(source) ?? 0;
    if (n >= this.limits.perSource || this.total >= this.limits.total) {
      this.dropped.calls++;
      // Counted up to a cap: a flood from many addresses must not grow this set without end.
      if (this.dropped.sources.size < MAX_DROPPED_SOURCES) this.dropped.sources.add(source);
      return false;
    }
    this.used.set(source, n + 1);
    this.total++;
    return true;
  }

  /** The dropped count so far, reset (for the minute's log line); null when none. */
  drain(): { calls: number; sources: number } | null {
    if (this.dropped.calls === 0) return null;
    const out = { calls: this.dropped.calls, sources: this.dropped.sources.size };
    this.dropped = { calls: 0, sources: new Set() };
    return out;
  }
}

/** onSend on the whole app: the row of every call its handler did not record. */
export function auditHook(app: FastifyInstance, sql: Queryable, budget = new AnonymousAuditBudget()): void {
  const summary = setInterval(() => {
    const d = budget.drain();
    if (d) app.log.warn(d, 'refused calls without a known credential past the audit budget: counted, not written to the audit log');
  }, 60_000);
  summary.unref();
  app.addHook('onClose', async () => clearInterval(summary));
  app.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply) => {
    const status = reply.statusCode;
    const mutating = req.routeOptions.config?.action !== undefined;
    if (!mutating && status !== 401 && status !== 403) return;
    if (!req.auditRowId && actorOf(req).actorType === 'anonymous' && !budget.take(req.ip ?? 'unknown', Date.now())) return;
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
