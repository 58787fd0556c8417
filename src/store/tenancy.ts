// Workspaces, projects, apps and environments: the scopes every resource is labelled with.
import type { Queryable } from './db';

export interface Scope {
  workspaceId: string;
  projectId: string;
  appId: string;
  environmentId: string;
}

export interface Environment extends Scope {
  id: string;
  slug: string;
  createdAt: Date;
}

export async function insertWorkspace(q: Queryable, w: { id: string; name: string }): Promise<void> {
  await q`INSERT INTO workspaces (id, name) VALUES (${w.id}, ${w.name})`;
}

export async function insertProject(q: Queryable, p: { id: string; workspaceId: string; name: string }): Promise<void> {
  await q`INSERT INTO projects (id, workspace_id, name) VALUES (${p.id}, ${p.workspaceId}, ${p.name})`;
}

export async function insertApp(q: Queryable, a: { id: string; workspaceId: string; projectId: string; name: string }): Promise<void> {
  await q`INSERT INTO apps (id, workspace_id, project_id, name) VALUES (${a.id}, ${a.workspaceId}, ${a.projectId}, ${a.name})`;
}

export async function insertEnvironment(q: Queryable, e: Scope & { slug: string }): Promise<void> {
  await q`INSERT INTO environments (id, workspace_id, project_id, app_id, slug)
          VALUES (${e.environmentId}, ${e.workspaceId}, ${e.projectId}, ${e.appId}, ${e.slug})`;
}

export async function getEnvironment(q: Queryable, id: string): Promise<Environment | undefined> {
  const [row] = await q<Environment[]>`SELECT id, id AS environment_id, workspace_id, project_id, app_id, slug, created_at
                                       FROM environments WHERE id = ${id}`;
  return row;
}

/** An environment's own regions (where a deploy naming none goes); null when it has none. */
export async function environmentRegions(q: Queryable, id: string): Promise<string[] | null> {
  const [row] = await q<{ regions: string[] | null }[]>`SELECT regions FROM environments WHERE id = ${id}`;
  return row?.regions?.length ? row.regions : null;
}
