// GET /v1/audit: the audit trail, newest first, in keyset pages (`next` is the cursor of the
// following page; stable while rows are added). Row ids and cursors are opaque (random UUIDs), and
// request ids random, so a key's rows count nobody else's calls. Needs audit.read; a key reads its scope's rows
// only, the admin token all of them.
import type { FastifyInstance } from 'fastify';
import { audit } from '../../store';
import type { AuditRow } from '../../store/audit';
import type { Workflows } from '../../workflow';
import { scopeOf } from '../permissions';
import { principalOf } from './scope';
import { AuditQuery } from './tenancy-schemas';
import { parse } from './parse';

/** A row as the API shows it: its opaque ref as its id (the bigserial's gaps would count every
 *  tenant's rows between two of the caller's). */
export const auditView = (r: AuditRow) => ({
  id: r.ref,
  at: r.at,
  actor: { type: r.actorType, id: r.actorId },
  action: r.action,
  target: r.target,
  outcome: r.outcome,
  requestId: r.requestId,
  traceId: r.traceId,
  sourceIp: r.sourceIp,
  scope: { workspaceId: r.workspaceId, projectId: r.projectId, environmentId: r.environmentId },
});

export function auditRoutes(deps: { workflows: Workflows }) {
  const { sql } = deps.workflows.commands;
  return (app: FastifyInstance) => {
    app.get('/v1/audit', { config: { permission: 'audit.read' } }, async (req) => {
      const q = parse(AuditQuery, req.query, 'query');
      const rows = await audit.listAudit(sql, { actor: q.actor, target: q.target, action: q.action, since: q.since, before: q.cursor, limit: q.limit, scope: scopeOf(principalOf(req)) });
      return { entries: rows.map(auditView), next: rows.length === q.limit ? rows[rows.length - 1]!.ref : null };
    });
  };
}
