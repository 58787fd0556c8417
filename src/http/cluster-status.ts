// ctrl's side of krane's status reports: POST /v1/cluster/deployments/status and
// POST /v1/cluster/sentinels/status. Agent tokens only; an agent may report only about its
// own region's resources, checked per resource (not just the body's `region`): every
// deployment must have a topology row in the region, every sentinel and policy must be in it.
// One foreign resource refuses the whole request with 403 and writes nothing; the reporter
// bisects its batch to isolate it.
//
// What reports do:
// - instances: upserted by (deployment, region, pod); `deleted` removes the row. A deleted
//   report about a deployment that no longer exists anywhere is accepted as a no-op (its rows
//   went with it), so krane can drain such reports.
// - failures (krane could not apply a desired state, e.g. 422 from the API server):
//   deployment_topology → a `failed` instance row with pod name `krane:apply` (APPLY_FAILURE_POD)
//   and the reason, which the deploy workflow reads like any failed instance and fails fast
//   on; krane removes it (a `deleted` report for that pod) after a later successful apply;
//   sentinel → health `unhealthy`, and a `progressing` deploy becomes `failed`;
//   cilium_network_policy → logged at error level (the policy has no status to record).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodType } from 'zod';
import { forbidden, issuesToDetails, validationError } from '../errors';
import { cilium, instances, sentinels, withTx, type Sql } from '../store';
import { DeploymentStatusReport, SentinelStatusReport, type ApplyFailure } from '../sync/wire';
import { AgentAuth, assertAgentRegion } from './auth';

export interface ClusterStatusDeps {
  sql: Sql;
  /** Agent tokens from configuration (REGION → token), besides those in the database. */
  agentTokens?: Record<string, string>;
  /** The process's one AgentAuth (shared with the feed routes, so a revocation reaches both);
   *  without it the routes build their own from `agentTokens`. */
  auth?: AgentAuth;
  /** Called after a report is stored, to wake workflows waiting on it (src/workflow/status-hooks.ts). */
  hooks?: {
    deploymentsReported(region: string, deploymentIds: string[]): Promise<void>;
    sentinelsReported(region: string, sentinelIds: string[]): Promise<void>;
  };
}

function parse<T>(schema: ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (!r.success) throw validationError('invalid status report', issuesToDetails(r.error.issues));
  return r.data;
}

function assertFailuresInRegion(failures: ApplyFailure[], region: string): void {
  for (const f of failures) {
    if (f.resource.region !== region) throw forbidden(`failure report for ${f.resource.type} ${f.resource.id} names region ${f.resource.region}`);
  }
}

export function clusterStatusRoutes(deps: ClusterStatusDeps) {
  const { sql } = deps;
  return (app: FastifyInstance) => {
    // onRequest: the token is checked before the body is read.
    app.addHook('onRequest', (deps.auth ?? new AgentAuth({ sql, configured: deps.agentTokens })).onRequest);

    app.post('/v1/cluster/deployments/status', async (req: FastifyRequest) => {
      const report = parse(DeploymentStatusReport, req.body);
      const region = report.region;
      assertAgentRegion(req, region);
      assertFailuresInRegion(report.failures, region);
      const depFailures = report.failures.filter((f) => f.resource.type === 'deployment_topology');
      if (depFailures.length !== report.failures.length) {
        throw validationError('deployment status reports carry only deployment_topology failures', [{ field: 'failures', message: 'wrong resource type' }]);
      }
      const ids = [...new Set([...report.instances.map((i) => i.deploymentId), ...depFailures.map((f) => f.resource.id)])];
      const membership = await instances.deploymentRegionMembership(sql, ids, region);
      const gone = new Set<string>();
      for (const id of ids) {
        const inRegion = membership.get(id);
        if (inRegion) continue;
        const onlyDeletes = inRegion === undefined && report.instances.every((i) => i.deploymentId !== id || i.deleted) && depFailures.every((f) => f.resource.id !== id);
        if (onlyDeletes) gone.add(id);
        else throw forbidden(`deployment ${id} is not deployed in region ${region}`);
      }
      const live = report.instances.filter((i) => !gone.has(i.deploymentId));
      const upserts = live.filter((i) => !i.deleted).map(({ deleted: _d, ...i }) => ({ ...i, region }));
      const deletes = live.filter((i) => i.deleted);
      const failures = depFailures.map((f) => ({
        deploymentId: f.resource.id,
        region,
        podName: instances.APPLY_FAILURE_POD,
        address: null,
        status: 'failed' as const,
        reason: f.reason,
        cpuMillicores: 0,
        memoryMib: 0,
      }));
      await withTx(sql, async (tx) => {
        await instances.deleteInstances(tx, region, deletes);
        await instances.upsertInstances(tx, [...upserts, ...failures]);
      });
      for (const f of depFailures) req.log.warn({ deploymentId: f.resource.id, region, reason: f.reason }, 'krane could not apply deployment');
      if (deps.hooks) await deps.hooks.deploymentsReported(region, ids.filter((id) => !gone.has(id)));
      return { accepted: { instances: upserts.length, deleted: deletes.length, ignored: report.instances.length - live.length, failures: failures.length } };
    });

    app.post('/v1/cluster/sentinels/status', async (req: FastifyRequest) => {
      const report = parse(SentinelStatusReport, req.body);
      const region = report.region;
      assertAgentRegion(req, region);
      assertFailuresInRegion(report.failures, region);
      const sentinelFailures = report.failures.filter((f) => f.resource.type === 'sentinel');
      const policyFailures = report.failures.filter((f) => f.resource.type === 'cilium_network_policy');
      if (sentinelFailures.length + policyFailures.length !== report.failures.length) {
        throw validationError('sentinel status reports carry only sentinel and cilium_network_policy failures', [{ field: 'failures', message: 'wrong resource type' }]);
      }
      const ids = [...new Set([...report.sentinels.map((s) => s.sentinelId), ...sentinelFailures.map((f) => f.resource.id)])];
      const regions = await sentinels.sentinelRegions(sql, ids);
      for (const id of ids) if (regions.get(id) !== region) throw forbidden(`sentinel ${id} is not in region ${region}`);
      for (const f of policyFailures) {
        const p = await cilium.getCiliumPolicy(sql, f.resource.id);
        if (p?.region !== region) throw forbidden(`cilium network policy ${f.resource.id} is not in region ${region}`);
      }
      await withTx(sql, async (tx) => {
        for (const s of report.sentinels) {
          const { sentinelId, ...observed } = s;
          await sentinels.updateSentinelObserved(tx, sentinelId, region, observed);
        }
        for (const f of sentinelFailures) await sentinels.markSentinelApplyFailed(tx, f.resource.id, region);
      });
      for (const f of report.failures) req.log.error({ resource: f.resource, reason: f.reason }, 'krane could not apply sentinel resource');
      if (deps.hooks) await deps.hooks.sentinelsReported(region, ids);
      return { accepted: { sentinels: report.sentinels.length, failures: report.failures.length } };
    });
  };
}
