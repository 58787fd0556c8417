// /v1/deployments: create, read, list, stop/start, rollback, promote, abort (a canary or blue-green).
// A key reaches only deployments of its scope (others are 404, lists leave them out); each change
// writes its audit row in its own transaction (the commands' `alongside`).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound, validationError } from '../../errors';
import { analysisChecks, autoscalers, deployments, domains, instances, quarantine, sentinels, tenancy } from '../../store';
import type { Deployment } from '../../store/deployments';
import type { AnalysisCheckRow } from '../../store/analysis-checks';
import { abortDeployment, changeDesiredState, createDeployment, destinationProblem, NO_OUTBOUND_ALLOW, promoteDeployment, rollbackDeployment, sentinelConverged, type OutboundPolicy, type Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { CreateDeploymentBody, IdParams, ListDeploymentsQuery, RollbackBody } from './schemas';
import { parse } from './parse';
import type { RegionRegistry } from '../../workflow/regions';
import { traceIdOf } from '../../tracing';
import { strategyOf } from '../../workflow/progressive/strategy';
import { auditAlongside } from '../audit';
import { once } from '../idempotency';
import { inScope } from '../permissions';
import { principalOf, visible } from './scope';

export interface DeploymentRouteDeps {
  workflows: Workflows;
  engine: Engine;
  /** Each region's liveness in the detail view, so `deploy --wait` can say a region is offline. */
  regions?: RegionRegistry;
  /** Where a canary's Prometheus gate may point (the policy Slack webhooks follow). */
  outbound?: OutboundPolicy;
}

/** A deployment as every view shows it. Env values are secrets (API keys, database URLs): views
 *  list the keys only; the values go to krane alone, in the desired state of its region. */
function summary(d: Deployment) {
  return {
    id: d.id,
    status: d.status,
    desiredState: d.desiredState,
    error: d.error,
    image: d.image,
    buildContext: d.buildContext,
    regions: d.regions,
    replicas: d.replicas,
    cpuMillicores: d.cpuMillicores,
    memoryMib: d.memoryMib,
    port: d.port,
    command: d.command,
    envKeys: Object.keys(d.env).sort(),
    readOnlyRootFilesystem: d.readOnlyRootFilesystem,
    workspaceId: d.workspaceId,
    projectId: d.projectId,
    appId: d.appId,
    environmentId: d.environmentId,
    rolledBackFrom: d.rolledBackFrom,
    version: d.version,
    /** The deployment whose config this one re-deployed (a rollback); the seed's name for rolledBackFrom. */
    rollbackOf: d.rolledBackFrom,
    autoscaling: d.autoscaling,
    strategy: strategyOf(d.strategy),
    /** The workflow's trace (null: ctrl traced nothing when it was created). */
    traceId: traceIdOf(d.traceparent),
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

/**
 * Analysis checks as the view shows them. Each compare check keeps both series (thinned); only
 * the newest per region carries them here, for the web view's plot, so the view stays small.
 */
function checkViews(checks: AnalysisCheckRow[]) {
  const newest = new Map<string | null, string>();
  for (const c of checks) newest.set(c.region, c.id);
  return checks.map((c) => {
    const { series, ...detail } = c.detail;
    return { at: c.at, ...detail, judge: c.judge, region: c.region, verdict: c.verdict, ...(series && newest.get(c.region) === c.id ? { series } : {}) };
  });
}

// Over 80 lines: the deployments' route table, a few lines per route; split by route it would
// spread one resource's API (and its shared scope checks) across files.
export function deploymentRoutes(deps: DeploymentRouteDeps) {
  const { workflows, engine } = deps;
  const cmd = workflows.commands;
  const sql = cmd.sql;

  /** The deployment if the caller may see it; otherwise the same 404 as a missing one. */
  const own = async (req: FastifyRequest, id: string) => visible(req, await deployments.getDeployment(sql, id), 'deployment', id);
  const write = (action: string) => ({ config: { permission: 'deployments.write' as const, action } });
  const traffic = (action: string) => ({ config: { permission: 'traffic.write' as const, action } });

  /** What is wrong with a gate's Prometheus URL for this caller; the allow list is the admin's. */
  const gateProblem = async (url: string, admin: boolean, outbound: OutboundPolicy): Promise<string | null> => {
    const problem = await destinationProblem(url, admin ? outbound : { ...outbound, allow: [] });
    if (!problem || admin || (await destinationProblem(url, outbound))) return problem;
    return 'is a host of --outbound-allow (the platform\'s network, whose Prometheus holds every workspace\'s series); only the admin token may aim a gate there, a key uses a public https Prometheus';
  };

  return (app: FastifyInstance) => {
    app.post('/v1/deployments', write('deployment.create'), async (req, reply) => {
      const p = principalOf(req);
      // A key of one environment deploys there when the body names none.
      const raw = req.body as { environmentId?: unknown } | null | undefined;
      const given = raw && typeof raw === 'object' && !Array.isArray(raw) && raw.environmentId === undefined && p.type === 'key' && p.scope.environmentId ? { ...raw, environmentId: p.scope.environmentId } : req.body;
      const body = parse(CreateDeploymentBody, given, 'body');
      const env = await tenancy.getEnvironment(sql, body.environmentId);
      if (env && !inScope(p, env)) throw validationError('unknown environment', [{ field: 'environmentId', message: `environment ${body.environmentId} not found` }]);
      if (body.autoscaling && (req.body as { replicas?: unknown }).replicas !== undefined) {
        throw validationError('invalid request body: replicas', [{ field: 'replicas', message: 'give replicas or autoscaling, not both (the autoscaler sets the replica count)' }]);
      }
      // ctrl will query this URL on the caller's behalf: only where the outbound policy allows.
      // The hosts of --outbound-allow are the platform's own network: its Prometheus scrapes
      // every workspace's sentinels and workloads, and a gate's query is the caller's PromQL,
      // sent as it is (nothing can confine it to one workspace's series). So only the admin
      // token aims a gate there; a key, always scoped to a workspace, uses a public https
      // Prometheus of its own, and the allow list does not widen that.
      const prometheusUrl = body.strategy && 'analysis' in body.strategy ? body.strategy.analysis?.prometheus?.url : undefined;
      const outbound = deps.outbound ?? NO_OUTBOUND_ALLOW;
      const refused = prometheusUrl ? await gateProblem(prometheusUrl, p.type === 'admin', outbound) : null;
      if (refused) throw validationError('invalid request body: strategy.analysis.prometheus.url', [{ field: 'strategy.analysis.prometheus.url', message: refused }]);
      // With an Idempotency-Key, a retried call answers with the deployment the first one made.
      const d = await once(sql, req, 'deployment.create', auditAlongside(req), (along) => createDeployment(cmd, body, null, along), (id) => own(req, id));
      return reply.status(202).send({ id: d.id, status: d.status, version: d.version, regions: d.regions });
    });

    app.get('/v1/deployments', { config: { permission: 'deployments.read' } }, async (req) => {
      const q = parse(ListDeploymentsQuery, req.query, 'query');
      // Another tenant's environment lists like an unknown one: empty.
      const env = await tenancy.getEnvironment(sql, q.environmentId);
      if (!env || !inScope(principalOf(req), env)) return { deployments: [] };
      const rows = await deployments.listDeployments(sql, q.environmentId, q.limit);
      return { deployments: rows.map(summary) };
    });

    app.get('/v1/deployments/:id', { config: { permission: 'deployments.read' } }, async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const d = await own(req, id);
      const [progress, inst, doms, invocations, liveness, checks, scalers, quarantined, snts] = await Promise.all([
        deployments.deploymentProgress(sql, id),
        instances.listInstances(sql, id),
        domains.listDomains(sql, { deploymentId: id }),
        engine.listInvocations({ target: workflows.deploy.name, key: id, limit: 20 }),
        deps.regions ? deps.regions.liveness(d.regions) : Promise.resolve(undefined),
        analysisChecks.listChecks(sql, id),
        autoscalers.listAutoscalers(sql, id),
        d.image ? quarantine.findQuarantined(sql, d.environmentId, d.image) : Promise.resolve(undefined),
        sentinels.listSentinels(sql, { environmentId: d.environmentId }),
      ]);
      const scaler = new Map(scalers.map((s) => [s.region, s]));
      // Per region with autoscaling: the bounds, the replicas the autoscaler last ran and wants.
      const autoscalingIn = (region: string) => {
        if (!d.autoscaling) return null;
        const s = scaler.get(region);
        return { min: d.autoscaling.minReplicas, max: d.autoscaling.maxReplicas, current: s?.currentReplicas ?? null, desired: s?.desiredReplicas ?? null, cpuUtilization: s?.cpuUtilization ?? null };
      };
      // Step history: the journal of the newest deploy run (earlier runs: GET /v1/invocations).
      const latest = invocations.find((i) => i.handler === 'deploy');
      const journal = latest ? (await engine.getInvocation(latest.id)).journal : [];
      return {
        ...summary(d),
        quarantined: quarantined ? { reason: quarantined.reason, deploymentId: quarantined.deploymentId } : null,
        topology: progress.map((t) => ({ ...t, autoscaling: autoscalingIn(t.region), regionStatus: liveness?.get(t.region)?.status ?? null, regionLastSeenAt: liveness?.get(t.region)?.lastSeenAt ?? null })),
        instances: inst.map((i) => ({ region: i.region, podName: i.podName, address: i.address, status: i.status, reason: i.reason, updatedAt: i.updatedAt })),
        domains: doms.map((x) => ({ hostname: x.hostname, kind: x.kind })),
        steps: journal.map((j) => ({ name: j.name, kind: j.kind, status: j.status, failure: j.failure, createdAt: j.createdAt, completedAt: j.completedAt })),
        invocations: invocations.map((i) => ({ id: i.id, handler: i.handler, status: i.status, createdAt: i.createdAt })),
        // The evidence of each analysis verdict (issue 27), the newest 100, oldest first.
        analysis: { checks: checkViews(checks) },
        // The environment's sentinels in the deployment's regions (seed 000): a deploy waits only
        // for those it created, so one still converging (a fleet rollout's) shows here instead.
        sentinels: snts
          .filter((x) => d.regions.includes(x.region))
          .map((x) => ({ id: x.id, region: x.region, image: x.image, runningImage: x.runningImage, deployStatus: x.deployStatus, health: x.health, converged: sentinelConverged(x) })),
      };
    });

    app.post('/v1/deployments/:id/stop', write('deployment.stop'), async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      await own(req, id);
      const r = await changeDesiredState(cmd, id, 'stopped', auditAlongside(req));
      return { id, desiredState: 'stopped', changed: r.changed, ...(r.generation !== undefined ? { generation: r.generation } : {}) };
    });

    app.post('/v1/deployments/:id/start', write('deployment.start'), async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      await own(req, id);
      const r = await changeDesiredState(cmd, id, 'running', auditAlongside(req));
      return { id, desiredState: 'running', changed: r.changed, ...(r.generation !== undefined ? { generation: r.generation } : {}) };
    });

    app.post('/v1/deployments/:id/rollback', traffic('deployment.rollback'), async (req, reply) => {
      const { id } = parse(IdParams, req.params, 'params');
      await own(req, id);
      const body = parse(RollbackBody, req.body ?? {}, 'body');
      const d = await once(sql, req, 'deployment.rollback', auditAlongside(req), (along) => rollbackDeployment(cmd, id, body, along), (made) => own(req, made));
      return reply.status(202).send({ id: d.id, status: d.status, rolledBackFrom: id });
    });

    app.post('/v1/deployments/:id/promote', traffic('deployment.promote'), async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      await own(req, id);
      return promoteDeployment(cmd, id, auditAlongside(req));
    });

    app.post('/v1/deployments/:id/abort', traffic('deployment.abort'), async (req, reply) => {
      const { id } = parse(IdParams, req.params, 'params');
      await own(req, id);
      return reply.status(202).send(await abortDeployment(cmd, id, auditAlongside(req)));
    });
  };
}
