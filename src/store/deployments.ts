// The deployments table: what the user asked to run, and the workflow's view of its progress.
import type { Queryable } from './db';
import type { Scope } from './tenancy';

export const DEPLOYMENT_STATUSES = ['pending', 'building', 'deploying', 'network', 'ready', 'failed', 'stopped', 'superseded'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];
export const DESIRED_STATES = ['running', 'stopped'] as const;
export type DesiredState = (typeof DESIRED_STATES)[number];

export interface NewDeployment extends Scope {
  id: string;
  image: string | null;
  buildContext: string | null;
  cpuMillicores: number;
  memoryMib: number;
  replicas: number;
  port: number;
  command: string[];
  env: Record<string, string>;
  regions: string[];
  rolledBackFrom?: string | null;
}

export interface Deployment extends NewDeployment {
  status: DeploymentStatus;
  desiredState: DesiredState;
  error: string | null;
  rolledBackFrom: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const columns = (q: Queryable) => q`
  id, workspace_id, project_id, app_id, environment_id, image, build_context, cpu_millicores,
  memory_mib, replicas, port, command, env, regions, status, desired_state, error,
  rolled_back_from, created_at, updated_at`;

export async function insertDeployment(q: Queryable, d: NewDeployment): Promise<Deployment> {
  const [row] = await q<Deployment[]>`
    INSERT INTO deployments (id, workspace_id, project_id, app_id, environment_id, image, build_context,
                             cpu_millicores, memory_mib, replicas, port, command, env, regions, rolled_back_from)
    VALUES (${d.id}, ${d.workspaceId}, ${d.projectId}, ${d.appId}, ${d.environmentId}, ${d.image}, ${d.buildContext},
            ${d.cpuMillicores}, ${d.memoryMib}, ${d.replicas}, ${d.port}, ${q.json(d.command)}, ${q.json(d.env)},
            ${d.regions}, ${d.rolledBackFrom ?? null})
    RETURNING ${columns(q)}`;
  return row!;
}

export async function getDeployment(q: Queryable, id: string): Promise<Deployment | undefined> {
  const [row] = await q<Deployment[]>`SELECT ${columns(q)} FROM deployments WHERE id = ${id}`;
  return row;
}

export async function listDeployments(q: Queryable, environmentId: string, limit = 100): Promise<Deployment[]> {
  return q<Deployment[]>`SELECT ${columns(q)} FROM deployments WHERE environment_id = ${environmentId}
                         ORDER BY created_at DESC, id LIMIT ${limit}`;
}

export async function setDeploymentStatus(
  q: Queryable,
  id: string,
  status: DeploymentStatus,
  error: string | null = null,
): Promise<Deployment | undefined> {
  const [row] = await q<Deployment[]>`UPDATE deployments SET status = ${status}, error = ${error}, updated_at = now()
                                      WHERE id = ${id} RETURNING ${columns(q)}`;
  return row;
}

/** Also records the image a build produced, so later steps and rollbacks use the built image. */
export async function setDeploymentImage(q: Queryable, id: string, image: string): Promise<void> {
  await q`UPDATE deployments SET image = ${image}, updated_at = now() WHERE id = ${id}`;
}

export async function setDeploymentDesiredState(q: Queryable, id: string, desired: DesiredState): Promise<Deployment | undefined> {
  const [row] = await q<Deployment[]>`UPDATE deployments SET desired_state = ${desired}, updated_at = now()
                                      WHERE id = ${id} RETURNING ${columns(q)}`;
  return row;
}
