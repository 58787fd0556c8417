// /v1/workspaces, /v1/workspaces/:id/projects, /v1/projects/:id/environments, /v1/environments/:id:
// tenants through the API. Every change and its audit row commit in one transaction. A key sees
// and changes only its scope: creating or deleting a workspace is fleet-wide (the admin token),
// a project needs a key of the whole workspace, an environment one of its project.
//
// Deleting refuses (409) while anything in it runs; otherwise it removes what the environments
// run in the clusters through the outbox (sentinels, gossip policies, routing tables; krane
// deletes the objects) and marks the rows deleted. Deleting a workspace also revokes its keys.
// The `default` workspace and environment stay: `dev` and deploys without environmentId use them.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, validationError } from '../../errors';
import { newId } from '../../ids';
import { apiKeys, hostnameClaims, removeEnvironment, tenancy, withTx, type Queryable, type TxSql } from '../../store';
import type { Workflows } from '../../workflow';
import { assertKnownRegions } from '../../workflow/regions';
import { environmentHostname } from '../../workflow/progressive/traffic';
import { reservedHostnameProblem } from '../../workflow/deploy/hostnames';
import { auditInTx } from '../audit';
import { forbiddenPermission } from '../permissions';
import { conflictOnDuplicate, principalOf, visible } from './scope';
import { IdParams } from './schemas';
import { CreateEnvironmentBody, CreateProjectBody, CreateWorkspaceBody } from './tenancy-schemas';
import { parse } from './parse';

const DEFAULT_ID = 'default';

function envView(e: tenancy.Environment, apexDomain: string) {
  return { id: e.id, workspaceId: e.workspaceId, projectId: e.projectId, slug: e.slug, regions: e.regions, hostname: environmentHostname(e, apexDomain), createdAt: e.createdAt };
}

/** A key narrowed below `level` cannot create at it (a project key makes no sibling projects). */
function assertBroadEnough(req: FastifyRequest, level: 'workspace' | 'project'): void {
  const p = principalOf(req);
  if (p.type !== 'key') return;
  if (level === 'workspace' && p.scope.projectId) throw forbiddenPermission('environments.write', 'a key scoped to a project cannot create projects');
  if (level === 'project' && p.scope.environmentId) throw forbiddenPermission('environments.write', 'a key scoped to an environment cannot create environments');
}

async function refuseWhileRunning(q: Queryable, environmentIds: string[], what: string): Promise<void> {
  const running = await tenancy.runningIn(q, environmentIds);
  if (running.deployments.length === 0 && running.sentinels.length === 0) return;
  const parts = [
    running.deployments.length ? `deployments ${running.deployments.join(', ')}` : '',
    running.sentinels.length ? `sentinels mid-deploy ${running.sentinels.join(', ')}` : '',
  ].filter(Boolean);
  throw new AppError('ERR_TENANCY_BUSY', `${what} still runs ${parts.join(' and ')}; stop them first`);
}

/**
 * Deletes a workspace, a project or one environment in the caller's transaction: refuses while
 * anything of it runs, removes its environments' cluster objects through the outbox, revokes the
 * keys scoped to it, marks the rows deleted. The caller then writes the audit row in the same
 * transaction.
 */
// A deletion takes the workspace's key lock (apiKeys.lockWorkspaceKeys) before any environment
// row: a key creation holds that lock and then, inserting, touches the environment's row, so the
// other order would deadlock; and a creation that waited for the lock re-checks the scope, so no
// key of a deleted scope is created after the revocation below ran.
async function deleteScope(tx: TxSql, what: string, envs: tenancy.Environment[], apexDomain: string, keysOf: () => Promise<string[]>, mark: () => Promise<void>) {
  await refuseWhileRunning(tx, envs.map((e) => e.id), what);
  let sentinels = 0;
  let policies = 0;
  for (const e of envs) {
    const r = await removeEnvironment(tx, e.id, environmentHostname(e, apexDomain));
    sentinels += r.sentinels;
    policies += r.policies;
  }
  const keys = (await keysOf()).length;
  await mark();
  return { environments: envs.length, sentinels, policies, keys };
}

// Over 80 lines: the route table of one resource family, each route short.
export function tenancyRoutes(deps: { workflows: Workflows }) {
  const { sql, apexDomain } = deps.workflows.commands;
  return (app: FastifyInstance) => {
    app.post('/v1/workspaces', { config: { permission: 'environments.write', unscoped: true, action: 'workspace.create' } }, async (req, reply) => {
      const body = parse(CreateWorkspaceBody, req.body, 'body');
      const id = body.id ?? newId('ws');
      const w = await conflictOnDuplicate(
        withTx(sql, async (tx) => {
          const row = await tenancy.insertWorkspace(tx, { id, name: body.name });
          await auditInTx(tx, req, { id, workspaceId: id });
          return row;
        }),
        `workspace ${id} already exists`,
      );
      return reply.status(201).send(w);
    });

    app.get('/v1/workspaces', { config: { permission: 'any' } }, async (req) => {
      const p = principalOf(req);
      return { workspaces: await tenancy.listWorkspaces(sql, p.type === 'key' ? p.scope.workspaceId : null) };
    });

    app.get('/v1/workspaces/:id', { config: { permission: 'any' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const w = await tenancy.getWorkspace(sql, id);
      visible(req, w && { workspaceId: w.id }, 'workspace', id);
      return w;
    });

    app.delete('/v1/workspaces/:id', { config: { permission: 'environments.write', unscoped: true, action: 'workspace.delete' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      if (id === DEFAULT_ID) throw new AppError('ERR_TENANCY_CONFLICT', 'the default workspace stays: dev and deploys without an environmentId use it');
      return withTx(sql, async (tx) => {
        const w = await tenancy.getWorkspace(tx, id);
        visible(req, w && { workspaceId: w.id }, 'workspace', id);
        await apiKeys.lockWorkspaceKeys(tx, id);
        // Read again under the lock: a deletion that held it before this one is gone now (404).
        const still = await tenancy.getWorkspace(tx, id);
        visible(req, still && { workspaceId: still.id }, 'workspace', id);
        const envs = await tenancy.lockEnvironmentsOf(tx, { workspaceId: id });
        const removed = await deleteScope(tx, `workspace ${id}`, envs, apexDomain, () => apiKeys.revokeKeysOf(tx, { workspaceId: id }), () => tenancy.markWorkspaceDeleted(tx, id));
        await auditInTx(tx, req, { id, workspaceId: id });
        return { id, deleted: true, removed };
      });
    });

    app.post('/v1/workspaces/:id/projects', { config: { permission: 'environments.write', action: 'project.create' } }, async (req, reply) => {
      const { id: workspaceId } = parse(IdParams, req.params, 'params');
      const body = parse(CreateProjectBody, req.body, 'body');
      const w = await tenancy.getWorkspace(sql, workspaceId);
      visible(req, w && { workspaceId: w.id }, 'workspace', workspaceId);
      assertBroadEnough(req, 'workspace');
      const id = body.id ?? newId('prj');
      const project = await conflictOnDuplicate(
        withTx(sql, async (tx) => {
          const row = await tenancy.insertProject(tx, { id, workspaceId, name: body.name });
          await tenancy.insertApp(tx, { id: newId('app'), workspaceId, projectId: id, name: DEFAULT_ID });
          await auditInTx(tx, req, { id, workspaceId, projectId: id });
          return row;
        }),
        `project ${id} already exists`,
      );
      return reply.status(201).send(project);
    });

    app.get('/v1/workspaces/:id/projects', { config: { permission: 'any' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const w = await tenancy.getWorkspace(sql, id);
      visible(req, w && { workspaceId: w.id }, 'workspace', id);
      const p = principalOf(req);
      return { projects: await tenancy.listProjects(sql, id, p.type === 'key' ? p.scope.projectId : null) };
    });

    app.get('/v1/projects/:id', { config: { permission: 'any' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      visible(req, await projectScope(sql, id), 'project', id);
      return (await tenancy.getProject(sql, id))!;
    });

    app.delete('/v1/projects/:id', { config: { permission: 'environments.write', action: 'project.delete' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      if (id === DEFAULT_ID) throw new AppError('ERR_TENANCY_CONFLICT', 'the default project stays: dev and deploys without an environmentId use it');
      assertBroadEnough(req, 'workspace');
      return withTx(sql, async (tx) => {
        const p = visible(req, await projectScope(tx, id), 'project', id);
        await apiKeys.lockWorkspaceKeys(tx, p.workspaceId);
        visible(req, await projectScope(tx, id), 'project', id);
        const envs = await tenancy.lockEnvironmentsOf(tx, { projectId: id });
        const removed = await deleteScope(tx, `project ${id}`, envs, apexDomain, () => apiKeys.revokeKeysOf(tx, { projectId: id }), () => tenancy.markProjectDeleted(tx, id));
        await auditInTx(tx, req, { id, workspaceId: p.workspaceId, projectId: id });
        return { id, deleted: true, removed };
      });
    });

    app.post('/v1/projects/:id/environments', { config: { permission: 'environments.write', action: 'environment.create' } }, async (req, reply) => {
      const { id: projectId } = parse(IdParams, req.params, 'params');
      const body = parse(CreateEnvironmentBody, req.body, 'body');
      const project = visible(req, await projectScope(sql, projectId), 'project', projectId);
      assertBroadEnough(req, 'project');
      await assertKnownRegions(sql, body.regions);
      const reserved = body.hostname ? reservedHostnameProblem(body.hostname, apexDomain) : undefined;
      if (reserved) throw validationError('invalid request body: hostname', [{ field: 'hostname', message: reserved }]);
      const appId = (await tenancy.projectApp(sql, projectId))!;
      if (await tenancy.slugTaken(sql, appId, body.slug)) throw new AppError('ERR_TENANCY_CONFLICT', `project ${projectId} already has an environment ${body.slug}`);
      const hostname = environmentHostname({ appId, slug: body.slug, hostname: body.hostname ?? null }, apexDomain);
      // Answered before any write when the name is plainly taken; the claim below decides a race.
      if (await hostnameClaims.ownerOf(sql, hostname)) throw hostnameClaims.hostnameTaken(hostname);
      const id = body.id ?? newId('env');
      const env = await conflictOnDuplicate(
        withTx(sql, async (tx) => {
          await tenancy.insertEnvironment(tx, { environmentId: id, workspaceId: project.workspaceId, projectId, appId, slug: body.slug, regions: body.regions, hostname: body.hostname ?? null });
          // One owner per name (issue 32): the environment's name, given or generated, is its own from now on.
          await hostnameClaims.claimHostname(tx, { hostname, kind: 'environment', workspaceId: project.workspaceId, environmentId: id });
          await auditInTx(tx, req, { id, workspaceId: project.workspaceId, projectId, environmentId: id });
          return (await tenancy.getEnvironment(tx, id))!;
        }),
        `environment ${id} or its slug already exists`,
      );
      return reply.status(201).send(envView(env, apexDomain));
    });

    app.get('/v1/projects/:id/environments', { config: { permission: 'any' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      visible(req, await projectScope(sql, id), 'project', id);
      const p = principalOf(req);
      const rows = await tenancy.listEnvironments(sql, id, p.type === 'key' ? p.scope.environmentId : null);
      return { environments: rows.map((e) => envView(e, apexDomain)) };
    });

    app.get('/v1/environments/:id', { config: { permission: 'any' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      return envView(visible(req, await tenancy.getEnvironment(sql, id), 'environment', id), apexDomain);
    });

    app.delete('/v1/environments/:id', { config: { permission: 'environments.write', action: 'environment.delete' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      if (id === DEFAULT_ID) throw new AppError('ERR_TENANCY_CONFLICT', 'the default environment stays: dev and deploys without an environmentId use it');
      return withTx(sql, async (tx) => {
        const seen = visible(req, await tenancy.getEnvironment(tx, id), 'environment', id);
        await apiKeys.lockWorkspaceKeys(tx, seen.workspaceId);
        const env = visible(req, await tenancy.lockEnvironment(tx, id), 'environment', id);
        const removed = await deleteScope(tx, `environment ${id}`, [env], apexDomain, () => apiKeys.revokeEnvironmentKeys(tx, id), () => Promise.resolve());
        await auditInTx(tx, req, { id, workspaceId: env.workspaceId, projectId: env.projectId, environmentId: id });
        return { id, deleted: true, removed };
      });
    });
  };
}

/** A project as a scope (workspace and project ids), or undefined. */
async function projectScope(q: Queryable, id: string) {
  const p = await tenancy.getProject(q, id);
  return p && { workspaceId: p.workspaceId, projectId: p.id };
}
