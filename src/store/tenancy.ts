// Workspaces, projects, apps and environments: the scopes every resource is labelled with.
// Created through the API (src/http/api/tenancy.ts); the `default` ones come from the first
// migration, for `dev`. Each project has one app, made with it (the label level clusters carry;
// the API does not show apps). Deletes are soft (deleted_at): reads skip deleted rows, foreign
// keys and audit rows keep pointing at real rows. Deleting an environment removes what it runs
// in the clusters through the outbox (environment-removal.ts: sentinels, gossip policies, its
// routing table) and frees
// its hostnames (domain rows).
import type { Queryable, TxSql } from './db';

export interface Scope {
  workspaceId: string;
  projectId: string;
  appId: string;
  environmentId: string;
}

export interface Environment extends Scope {
  id: string;
  slug: string;
  /** Regions a deployment gets when it names none (empty: it must name them). */
  regions: string[];
  /** Null: the generated `<app>-<slug>.<apex>` hostname. */
  hostname: string | null;
  createdAt: Date;
}

export interface Workspace {
  id: string;
  name: string;
  createdAt: Date;
}

export interface Project {
  id: string;
  workspaceId: string;
  name: string;
  createdAt: Date;
}

/** What a list may see: everything (null) or one workspace, project or environment. */
export interface ScopeFilter {
  workspaceId: string;
  projectId?: string | null;
  environmentId?: string | null;
}

export async function insertWorkspace(q: Queryable, w: { id: string; name: string }): Promise<Workspace> {
  const [row] = await q<Workspace[]>`INSERT INTO workspaces (id, name) VALUES (${w.id}, ${w.name}) RETURNING id, name, created_at`;
  return row!;
}

export async function insertProject(q: Queryable, p: { id: string; workspaceId: string; name: string }): Promise<Project> {
  const [row] = await q<Project[]>`INSERT INTO projects (id, workspace_id, name) VALUES (${p.id}, ${p.workspaceId}, ${p.name})
                                   RETURNING id, workspace_id, name, created_at`;
  return row!;
}

export async function insertApp(q: Queryable, a: { id: string; workspaceId: string; projectId: string; name: string }): Promise<void> {
  await q`INSERT INTO apps (id, workspace_id, project_id, name) VALUES (${a.id}, ${a.workspaceId}, ${a.projectId}, ${a.name})`;
}

export async function insertEnvironment(q: Queryable, e: Scope & { slug: string; regions?: string[]; hostname?: string | null }): Promise<void> {
  await q`INSERT INTO environments (id, workspace_id, project_id, app_id, slug, regions, hostname)
          VALUES (${e.environmentId}, ${e.workspaceId}, ${e.projectId}, ${e.appId}, ${e.slug}, ${e.regions ?? []}, ${e.hostname ?? null})`;
}

const envCols = (q: Queryable) => q`id, id AS environment_id, workspace_id, project_id, app_id, slug, regions, hostname, created_at`;

export async function getEnvironment(q: Queryable, id: string): Promise<Environment | undefined> {
  const [row] = await q<Environment[]>`SELECT ${envCols(q)} FROM environments WHERE id = ${id} AND deleted_at IS NULL`;
  return row;
}

export async function getWorkspace(q: Queryable, id: string): Promise<Workspace | undefined> {
  const [row] = await q<Workspace[]>`SELECT id, name, created_at FROM workspaces WHERE id = ${id} AND deleted_at IS NULL`;
  return row;
}

export async function getProject(q: Queryable, id: string): Promise<Project | undefined> {
  const [row] = await q<Project[]>`SELECT id, workspace_id, name, created_at FROM projects WHERE id = ${id} AND deleted_at IS NULL`;
  return row;
}

/** The app a project's environments hang off (the one made with the project). */
export async function projectApp(q: Queryable, projectId: string): Promise<string | undefined> {
  const [row] = await q<{ id: string }[]>`SELECT id FROM apps WHERE project_id = ${projectId} ORDER BY created_at, id LIMIT 1`;
  return row?.id;
}

export async function listWorkspaces(q: Queryable, only: string | null): Promise<Workspace[]> {
  return q<Workspace[]>`SELECT id, name, created_at FROM workspaces
                        WHERE deleted_at IS NULL AND (${only}::text IS NULL OR id = ${only}) ORDER BY created_at, id`;
}

export async function listProjects(q: Queryable, workspaceId: string, only: string | null): Promise<Project[]> {
  return q<Project[]>`SELECT id, workspace_id, name, created_at FROM projects
                      WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL AND (${only}::text IS NULL OR id = ${only})
                      ORDER BY created_at, id`;
}

export async function listEnvironments(q: Queryable, projectId: string, only: string | null): Promise<Environment[]> {
  return q<Environment[]>`SELECT ${envCols(q)} FROM environments
                          WHERE project_id = ${projectId} AND deleted_at IS NULL AND (${only}::text IS NULL OR id = ${only})
                          ORDER BY created_at, id`;
}

/** Whether a live environment of the same project already has this slug (a 409 before the insert). */
export async function slugTaken(q: Queryable, appId: string, slug: string): Promise<boolean> {
  const [row] = await q`SELECT 1 FROM environments WHERE app_id = ${appId} AND slug = ${slug} AND deleted_at IS NULL`;
  return !!row;
}

/**
 * What still runs in the environments: deployments on their way or running (not failed, stopped,
 * superseded or rolled back, or with a region still running), and sentinels mid-deploy. A
 * deletion refuses while any is left; the caller stops them first.
 */
export async function runningIn(q: Queryable, environmentIds: readonly string[]): Promise<{ deployments: string[]; sentinels: string[] }> {
  const deps = await q<{ id: string }[]>`
    SELECT d.id FROM deployments d
    WHERE d.environment_id = ANY(${environmentIds as string[]}::text[])
      AND ((d.desired_state = 'running' AND d.status NOT IN ('failed','stopped','superseded','rolled_back'))
           OR EXISTS (SELECT 1 FROM deployment_topology t WHERE t.deployment_id = d.id AND t.desired_status = 'running'))
    ORDER BY d.created_at LIMIT 20`;
  const snts = await q<{ id: string }[]>`SELECT id FROM sentinels WHERE environment_id = ANY(${environmentIds as string[]}::text[])
                                         AND deploy_status = 'progressing' LIMIT 20`;
  return { deployments: deps.map((r) => r.id), sentinels: snts.map((r) => r.id) };
}

/** Live environments of a workspace or a project, locked for a deletion (in id order, so two
 *  deletions lock in the same order). */
export async function lockEnvironmentsOf(tx: TxSql, of: { workspaceId: string } | { projectId: string }): Promise<Environment[]> {
  const ws = 'workspaceId' in of ? of.workspaceId : null;
  const prj = 'projectId' in of ? of.projectId : null;
  return tx<Environment[]>`SELECT ${envCols(tx)} FROM environments
                           WHERE (${ws}::text IS NULL OR workspace_id = ${ws}) AND (${prj}::text IS NULL OR project_id = ${prj})
                             AND deleted_at IS NULL
                           ORDER BY id FOR UPDATE`;
}

/**
 * The environment, still live, held against a deletion until the caller's transaction ends: a
 * deletion locks it FOR UPDATE, so a write into the environment that takes this first makes the
 * deletion wait and see the write (and refuse), and one that comes second sees it deleted.
 */
export async function shareEnvironment(tx: TxSql, id: string): Promise<Environment | undefined> {
  const [row] = await tx<Environment[]>`SELECT ${envCols(tx)} FROM environments WHERE id = ${id} AND deleted_at IS NULL FOR SHARE`;
  return row;
}

export async function lockEnvironment(tx: TxSql, id: string): Promise<Environment | undefined> {
  const [row] = await tx<Environment[]>`SELECT ${envCols(tx)} FROM environments WHERE id = ${id} AND deleted_at IS NULL FOR UPDATE`;
  return row;
}

export async function markProjectDeleted(tx: TxSql, id: string): Promise<void> {
  await tx`UPDATE projects SET deleted_at = now() WHERE id = ${id}`;
}

export async function markWorkspaceDeleted(tx: TxSql, id: string): Promise<void> {
  await tx`UPDATE projects SET deleted_at = now() WHERE workspace_id = ${id} AND deleted_at IS NULL`;
  await tx`UPDATE workspaces SET deleted_at = now() WHERE id = ${id}`;
}

/** Ids of every deployment and sentinel in a key's scope: the object keys of the invocations
 *  it may list, given to the engine's query so a page is filled from the scope's own. */
export async function objectIdsInScope(q: Queryable, s: { workspaceId: string; projectId: string | null; environmentId: string | null }): Promise<string[]> {
  const rows = await q<{ id: string }[]>`
    SELECT id FROM deployments
     WHERE workspace_id = ${s.workspaceId}
       AND (${s.projectId}::text IS NULL OR project_id = ${s.projectId})
       AND (${s.environmentId}::text IS NULL OR environment_id = ${s.environmentId})
    UNION ALL
    SELECT id FROM sentinels
     WHERE workspace_id = ${s.workspaceId}
       AND (${s.projectId}::text IS NULL OR project_id = ${s.projectId})
       AND (${s.environmentId}::text IS NULL OR environment_id = ${s.environmentId})`;
  return rows.map((r) => r.id);
}

/** The scope of each deployment or sentinel among `ids` (others are absent): what an invocation
 *  keyed by one belongs to. */
export async function scopesOf(q: Queryable, ids: readonly string[]): Promise<Map<string, { workspaceId: string; projectId: string; environmentId: string }>> {
  if (ids.length === 0) return new Map();
  const rows = await q<{ id: string; workspaceId: string; projectId: string; environmentId: string }[]>`
    SELECT id, workspace_id, project_id, environment_id FROM deployments WHERE id = ANY(${ids as string[]}::text[])
    UNION ALL
    SELECT id, workspace_id, project_id, environment_id FROM sentinels WHERE id = ANY(${ids as string[]}::text[])`;
  return new Map(rows.map((r) => [r.id, { workspaceId: r.workspaceId, projectId: r.projectId, environmentId: r.environmentId }]));
}

/** The scope of one deployment, sentinel or environment, looked up in its own kind's table
 *  (ids of different kinds may be equal; a live event names which kind it means). */
export async function scopeOfKind(q: Queryable, kind: 'deployment' | 'sentinel' | 'environment', id: string): Promise<{ workspaceId: string; projectId: string; environmentId: string } | undefined> {
  const rows =
    kind === 'deployment'
      ? await q<{ workspaceId: string; projectId: string; environmentId: string }[]>`SELECT workspace_id, project_id, environment_id FROM deployments WHERE id = ${id}`
      : kind === 'sentinel'
        ? await q<{ workspaceId: string; projectId: string; environmentId: string }[]>`SELECT workspace_id, project_id, environment_id FROM sentinels WHERE id = ${id}`
        : await q<{ workspaceId: string; projectId: string; environmentId: string }[]>`SELECT workspace_id, project_id, id AS environment_id FROM environments WHERE id = ${id} AND deleted_at IS NULL`;
  return rows[0];
}

/** An environment's own regions (where a deploy naming none goes); null when it has none. */
export async function environmentRegions(q: Queryable, id: string): Promise<string[] | null> {
  const [row] = await q<{ regions: string[] | null }[]>`SELECT regions FROM environments WHERE id = ${id}`;
  return row?.regions?.length ? row.regions : null;
}
