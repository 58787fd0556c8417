// What krane last reported about autoscaled deployments' HorizontalPodAutoscalers, per region
// (issue 25): observed state like instances, written by status reports only.
import type { Queryable } from './db';

export interface AutoscalerRow {
  deploymentId: string;
  region: string;
  minReplicas: number;
  maxReplicas: number;
  currentReplicas: number | null;
  desiredReplicas: number | null;
  cpuUtilization: number | null;
  updatedAt: Date;
}

export type AutoscalerReport = Omit<AutoscalerRow, 'updatedAt'>;

export async function upsertAutoscalers(q: Queryable, rows: AutoscalerReport[]): Promise<void> {
  for (const r of rows) {
    await q`INSERT INTO topology_autoscalers (deployment_id, region, min_replicas, max_replicas, current_replicas, desired_replicas, cpu_utilization)
            VALUES (${r.deploymentId}, ${r.region}, ${r.minReplicas}, ${r.maxReplicas}, ${r.currentReplicas}, ${r.desiredReplicas}, ${r.cpuUtilization})
            ON CONFLICT (deployment_id, region) DO UPDATE SET min_replicas = EXCLUDED.min_replicas, max_replicas = EXCLUDED.max_replicas,
              current_replicas = EXCLUDED.current_replicas, desired_replicas = EXCLUDED.desired_replicas, cpu_utilization = EXCLUDED.cpu_utilization, updated_at = now()`;
  }
}

export async function deleteAutoscalers(q: Queryable, region: string, deploymentIds: string[]): Promise<void> {
  if (deploymentIds.length === 0) return;
  await q`DELETE FROM topology_autoscalers WHERE region = ${region} AND deployment_id = ANY(${deploymentIds}::text[])`;
}

export async function listAutoscalers(q: Queryable, deploymentId: string): Promise<AutoscalerRow[]> {
  return q<AutoscalerRow[]>`SELECT deployment_id, region, min_replicas, max_replicas, current_replicas, desired_replicas, cpu_utilization, updated_at
                            FROM topology_autoscalers WHERE deployment_id = ${deploymentId} ORDER BY region`;
}
