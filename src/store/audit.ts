// audit_log: who did what, to what, with which outcome. Rows of changes are written in the
// change's own transaction by the callers (pass the transaction as `q`), so a change without
// its row cannot commit; refused and failed calls get a row of their own. Rows carry no request
// content: an action name, a target id, the actor's id, never a secret.
import type { Queryable } from './db';

export const AUDIT_OUTCOMES = ['ok', 'denied', 'invalid', 'failed', 'limited'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];
export type ActorType = 'admin' | 'key' | 'agent' | 'anonymous';

export interface AuditScope {
  workspaceId: string | null;
  projectId: string | null;
  environmentId: string | null;
}

export interface NewAuditRow extends AuditScope {
  actorType: ActorType;
  actorId: string | null;
  action: string;
  target: string | null;
  outcome: AuditOutcome;
  requestId: string | null;
  traceId: string | null;
  sourceIp: string | null;
}

export interface AuditRow extends NewAuditRow {
  /** The table's order (bigserial): ctrl's own, never shown (its gaps count everyone's rows). */
  id: string;
  /** The row's opaque id (a random UUID, sql/0028): what views and page cursors carry. */
  ref: string;
  at: Date;
}

/** Inserts one row; returns its id (a string: the column is bigint). */
export async function insertAudit(q: Queryable, r: NewAuditRow): Promise<string> {
  const [row] = await q<{ id: string }[]>`
    INSERT INTO audit_log (actor_type, actor_id, action, target, outcome, request_id, trace_id, source_ip, workspace_id, project_id, environment_id)
    VALUES (${r.actorType}, ${r.actorId}, ${r.action}, ${r.target}, ${r.outcome}, ${r.requestId}, ${r.traceId}, ${r.sourceIp},
            ${r.workspaceId}, ${r.projectId}, ${r.environmentId})
    RETURNING id::text AS id`;
  return row!.id;
}

/** A call whose change committed but whose answer failed afterwards (a workflow refused it). */
export async function setOutcome(q: Queryable, id: string, outcome: AuditOutcome): Promise<void> {
  await q`UPDATE audit_log SET outcome = ${outcome} WHERE id = ${id}::bigint`;
}

export interface AuditFilter {
  actor?: string | undefined;
  target?: string | undefined;
  action?: string | undefined;
  since?: Date | undefined;
  /** Keyset cursor: the ref of the previous page's last row; rows older than it. An unknown
   *  ref (deleted by retention) gives an empty page. */
  before?: string | undefined;
  limit: number;
  /** Null: every row (the admin token); otherwise rows of this scope only. */
  scope: { workspaceId: string; projectId: string | null; environmentId: string | null } | null;
}

/** Newest first, one page. `action` matches a prefix (`deployment.` for every deployment action). */
export async function listAudit(q: Queryable, f: AuditFilter): Promise<AuditRow[]> {
  const s = f.scope;
  return q<AuditRow[]>`
    SELECT id::text AS id, ref::text AS ref, at, actor_type, actor_id, action, target, outcome, request_id, trace_id, source_ip, workspace_id, project_id, environment_id
    FROM audit_log
    WHERE (${f.before ?? null}::uuid IS NULL OR id < (SELECT c.id FROM audit_log c WHERE c.ref = ${f.before ?? null}::uuid))
      AND (${f.actor ?? null}::text IS NULL OR actor_id = ${f.actor ?? null})
      AND (${f.target ?? null}::text IS NULL OR target = ${f.target ?? null})
      AND (${f.action ?? null}::text IS NULL OR starts_with(action, ${f.action ?? null}::text))
      AND (${f.since ?? null}::timestamptz IS NULL OR at >= ${f.since ?? null})
      AND (${s?.workspaceId ?? null}::text IS NULL OR workspace_id = ${s?.workspaceId ?? null})
      AND (${s?.projectId ?? null}::text IS NULL OR project_id = ${s?.projectId ?? null})
      AND (${s?.environmentId ?? null}::text IS NULL OR environment_id = ${s?.environmentId ?? null})
    ORDER BY audit_log.id DESC LIMIT ${f.limit}`;
}

/** Deletes rows older than the retention, one batch; returns how many (the caller loops). */
export async function deleteOlderThan(q: Queryable, retentionMs: number, batch: number): Promise<number> {
  const r = await q`DELETE FROM audit_log WHERE id IN (
                      SELECT id FROM audit_log WHERE at < now() - make_interval(secs => ${retentionMs / 1000}) ORDER BY id LIMIT ${batch})`;
  return r.count;
}
