// instances: the actual state krane reports, one row per pod. Upserts are keyed by
// (deployment, region, pod) so repeated reports converge to the latest.
import type { Queryable } from './db';

export const INSTANCE_STATUSES = ['pending', 'running', 'failed'] as const;
export type InstanceStatus = (typeof INSTANCE_STATUSES)[number];

export interface Instance {
  deploymentId: string;
  region: string;
  podName: string;
  address: string | null;
  status: InstanceStatus;
  reason: string | null;
  cpuMillicores: number;
  memoryMib: number;
  updatedAt: Date;
}

export type InstanceReport = Omit<Instance, 'updatedAt'>;

export async function upsertInstance(q: Queryable, i: InstanceReport): Promise<void> {
  await q`
    INSERT INTO instances (deployment_id, region, pod_name, address, status, reason, cpu_millicores, memory_mib)
    VALUES (${i.deploymentId}, ${i.region}, ${i.podName}, ${i.address}, ${i.status}, ${i.reason}, ${i.cpuMillicores}, ${i.memoryMib})
    ON CONFLICT (deployment_id, region, pod_name) DO UPDATE
      SET address = EXCLUDED.address, status = EXCLUDED.status, reason = EXCLUDED.reason,
          cpu_millicores = EXCLUDED.cpu_millicores, memory_mib = EXCLUDED.memory_mib, updated_at = now()`;
}

export async function deleteInstance(q: Queryable, deploymentId: string, region: string, podName: string): Promise<void> {
  await q`DELETE FROM instances WHERE deployment_id = ${deploymentId} AND region = ${region} AND pod_name = ${podName}`;
}

export async function deleteInstancesOf(q: Queryable, deploymentId: string): Promise<number> {
  const r = await q`DELETE FROM instances WHERE deployment_id = ${deploymentId}`;
  return r.count;
}

export async function listInstances(q: Queryable, deploymentId: string): Promise<Instance[]> {
  return q<Instance[]>`SELECT * FROM instances WHERE deployment_id = ${deploymentId} ORDER BY region, pod_name`;
}
