// analysis_checks: the evidence of every analysis verdict (issue 27), written by the workflow's
// checks and read by the deployment view. Rows are appended, never changed; they go with their
// deployment.
import type { Queryable } from './db';

export interface AnalysisCheckRow {
  id: string;
  deploymentId: string;
  at: Date;
  judge: 'threshold' | 'compare';
  region: string | null;
  verdict: 'pass' | 'fail' | 'inconclusive';
  detail: Record<string, unknown>;
}

export async function insertChecks(q: Queryable, rows: Omit<AnalysisCheckRow, 'id' | 'at'>[], at: Date): Promise<void> {
  if (rows.length === 0) return;
  await q`
    INSERT INTO analysis_checks (deployment_id, at, judge, region, verdict, detail)
    SELECT d, ${at}, j, r, v, x::jsonb
    FROM unnest(${rows.map((r) => r.deploymentId)}::text[], ${rows.map((r) => r.judge)}::text[], ${rows.map((r) => r.region) as string[]}::text[],
                ${rows.map((r) => r.verdict)}::text[], ${rows.map((r) => JSON.stringify(r.detail))}::text[]) AS t(d, j, r, v, x)`;
}

/** When the deployment's first check of `judge` ran (its comparison window starts there), or null. */
export async function firstCheckAt(q: Queryable, deploymentId: string, judge: AnalysisCheckRow['judge']): Promise<Date | null> {
  const [row] = await q<{ at: Date | null }[]>`SELECT min(at) AS at FROM analysis_checks WHERE deployment_id = ${deploymentId} AND judge = ${judge}`;
  return row?.at ?? null;
}

/** The newest `limit` checks, oldest first (the order they ran). */
export async function listChecks(q: Queryable, deploymentId: string, limit = 100): Promise<AnalysisCheckRow[]> {
  const rows = await q<AnalysisCheckRow[]>`
    SELECT id::text, deployment_id, at, judge, region, verdict, detail FROM analysis_checks
    WHERE deployment_id = ${deploymentId} ORDER BY analysis_checks.id DESC LIMIT ${limit}`;
  return rows.reverse();
}
