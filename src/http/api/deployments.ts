// /v1/deployments: create, read, list, stop/start, rollback, promote, abort (a canary or blue-green).
import type { FastifyInstance } from 'fastify';
import { notFound, validationError } from '../../errors';
import { autoscalers, deployments, domains, instances, quarantine } from '../../store';
import type { Deployment } from '../../store/deployments';
import { abortDeployment, changeDesiredState, createDeployment, destinationProblem, NO_OUTBOUND_ALLOW, promoteDeployment, rollbackDeployment, type OutboundPolicy, type Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { CreateDeploymentBody, IdParams, ListDeploymentsQuery, RollbackBody } from './schemas';
import { parse } from './parse';
import type { RegionRegistry } from '../../workflow/regions';
import { traceIdOf } from '../../tracing';
import { strategyOf } from '../../workflow/strategy';

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

export function deploymentRoutes(deps: DeploymentRouteDeps) {
  const { workflows, engine } = deps;
  const cmd = workflows.commands;
  const sql = cmd.sql;

  return (app: FastifyInstance) => {
    app.post('/v1/deployments', async (req, reply) => {
      const body = parse(CreateDeploymentBody, req.body, 'body');
      if (body.autoscaling && (req.body as { replicas?: unknown }).replicas !== undefined) {
        throw validationError('invalid request body: replicas', [{ field: 'replicas', message: 'give replicas or autoscaling, not both (the autoscaler sets the replica count)' }]);
      }
      // ctrl will query this URL on the caller's behalf: only where the outbound policy allows.
      const prometheusUrl = body.strategy && 'analysis' in body.strategy ? body.strategy.analysis?.prometheus?.url : undefined;
      const refused = prometheusUrl ? await destinationProblem(prometheusUrl, deps.outbound ?? NO_OUTBOUND_ALLOW) : null;
      if (refused) throw validationError('invalid request body: strategy.analysis.prometheus.url', [{ field: 'strategy.analysis.prometheus.url', message: refused }]);
      const d = await createDeployment(cmd, body);
      return reply.status(202).send({ id: d.id, status: d.status, version: d.version, regions: d.regions });
    });

    app.get('/v1/deployments', async (req) => {
      const q = parse(ListDeploymentsQuery, req.query, 'query');
      const rows = await deployments.listDeployments(sql, q.environmentId, q.limit);
      return { deployments: rows.map(summary) };
    });

    app.get('/v1/deployments/:id', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const d = await deployments.getDeployment(sql, id);
      if (!d) throw notFound('deployment', id);
      const [progress, inst, doms, invocations, liveness, scalers, quarantined] = await Promise.all([
        deployments.deploymentProgress(sql, id),
        instances.listInstances(sql, id),
        domains.listDomains(sql, { deploymentId: id }),
        engine.listInvocations({ target: workflows.deploy.name, key: id, limit: 20 }),
        deps.regions ? deps.regions.liveness(d.regions) : Promise.resolve(undefined),
        autoscalers.listAutoscalers(sql, id),
        d.image ? quarantine.findQuarantined(sql, d.environmentId, d.image) : Promise.resolve(undefined),
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
      };
    });

    app.post('/v1/deployments/:id/stop', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const r = await changeDesiredState(cmd, id, 'stopped');
      return { id, desiredState: 'stopped', changed: r.changed };
    });

    app.post('/v1/deployments/:id/start', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      const r = await changeDesiredState(cmd, id, 'running');
      return { id, desiredState: 'running', changed: r.changed };
    });

    app.post('/v1/deployments/:id/rollback', async (req, reply) => {
      const { id } = parse(IdParams, req.params, 'params');
      const body = parse(RollbackBody, req.body ?? {}, 'body');
      const d = await rollbackDeployment(cmd, id, body);
      return reply.status(202).send({ id: d.id, status: d.status, rolledBackFrom: id });
    });

    app.post('/v1/deployments/:id/promote', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      return promoteDeployment(cmd, id);
    });

    app.post('/v1/deployments/:id/abort', async (req, reply) => {
      const { id } = parse(IdParams, req.params, 'params');
      return reply.status(202).send(await abortDeployment(cmd, id));
    });
  };
}
