// ctrl's side of krane's status reports: POST /v1/cluster/deployments/status and
// POST /v1/cluster/sentinels/status. Agent tokens only; an agent may report only about its
// own region's resources, checked per resource (not just the body's `region`): every
// deployment must have a topology row in the region, every sentinel and policy must be in it,
// and a routing table's failure must be of a table sent to it. Only checked ids reach the log.
// One foreign resource refuses the whole request with 403 and writes nothing; the reporter
// bisects its batch to isolate it.
//
// What reports do:
// - instances: upserted by (deployment, region, pod); `deleted` removes the row. A deleted
//   report about a deployment that no longer exists anywhere is accepted as a no-op (its rows
//   went with it), so krane can drain such reports.
// - instanceSet (after each full pod list, issue 23): the region's rows of pods not in it, and
//   not named in this body, are removed first (they outlived their pods: a delete report lost
//   with a killed krane), then the body's own reports apply; rows younger than
//   INSTANCE_SET_MIN_AGE_MS are kept for the next set. The deployments that lost rows are woken
//   like reported ones.
// - applies (krane's outcome per resource: `failed` with a code and reason, or `succeeded`):
//   applied to apply_failures strictly in the order krane listed them, so a failure that krane
//   cleared afterwards never comes back. The deploy workflow reads a deployment's failure and
//   fails fast on it; a sentinel failure also makes its health `unhealthy` and a `progressing`
//   deploy `failed`.
// - routes: a report that changes which pods of a deployment are running (Ready) in the region
//   records a routes change for the tables naming it there, since the routes address those pods
//   (issue 33: an autoscaler's extra pods get traffic).
// - sentinels: observed fields, ordered by { leaseEpoch, seq } (krane's Lease transitions and
//   its leader's counter): a report older than the row's is ignored. A wall-clock observedAt is
//   kept for display only, and only within OBSERVED_AT_SKEW_MS of ctrl's clock.
// - autoscalers: the HorizontalPodAutoscalers of autoscaled deployments, upserted by
//   (deployment, region); `deleted` removes the row.
// - POST /v1/cluster/region/status: the region's GC brake (held while krane waits for an
//   operator to confirm a large deletion), kept per region, newest report wins.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodType } from 'zod';
import { forbidden, issuesToDetails, validationError } from '../errors';
import { applyFailures, autoscalers, cilium, instances, routes, sentinels, withTx, type Sql } from '../store';
import { DeploymentStatusReport, RegionStatusReport, SentinelStatusReport, type ApplyReport, type SentinelStatus } from '../sync/wire';
import { AgentAuth, assertAgentRegion } from './auth';
import { withSpan } from '../tracing';
import { agentTextFields } from './agent-text';

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

/**
 * A row written this recently may be newer than the list a complete set came from (another
 * replica's report, a retried body): only older rows are judged by the set. A stale row from a
 * lost report is older than any krane restart, so it still goes at the first set.
 */
const INSTANCE_SET_MIN_AGE_MS = 5_000;

/**
 * How far krane's wall clock may be from ctrl's for its observedAt to be shown: NTP keeps nodes
 * within a second; a minute leaves room for a node without it, and a value past that (1e308)
 * says nothing true. It orders nothing either way.
 */
const OBSERVED_AT_SKEW_MS = 60_000;

/** The store's form of a sentinel report: its order, and its time only when plausible. */
function observedOf(s: SentinelStatus, now: number): sentinels.SentinelObserved {
  const { sentinelId: _id, specHash, leaseEpoch, seq, observedAt, ...observed } = s;
  return {
    ...observed,
    observedSpecHash: specHash,
    observedAt: observedAt !== undefined && Math.abs(observedAt - now) <= OBSERVED_AT_SKEW_MS ? observedAt : null,
    order: leaseEpoch !== undefined && seq !== undefined ? { epoch: leaseEpoch, seq } : undefined,
  };
}

function parse<T>(schema: ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (!r.success) throw validationError('invalid status report', issuesToDetails(r.error.issues));
  return r.data;
}

function assertAppliesInRegion(applies: ApplyReport[], region: string): void {
  for (const a of applies) {
    if (a.resource.region !== region) throw forbidden(`apply report for ${a.resource.type} ${a.resource.id} names region ${a.resource.region}`);
  }
}

/** The store's form of krane's outcomes, in krane's order. */
function outcomes(applies: ApplyReport[]): applyFailures.ApplyOutcome[] {
  return applies.map((a) =>
    a.outcome === 'failed'
      ? { resourceType: a.resource.type, resourceId: a.resource.id, outcome: 'failed', code: a.code, reason: a.reason }
      : { resourceType: a.resource.type, resourceId: a.resource.id, outcome: 'succeeded' },
  );
}

/** A resource's last outcome in the list, when it is a failure (the ones that stand). */
/** Stores a report inside a span linked to the apply spans it answers (krane's
 *  deployment.apply.<region>), when any was traced; untraced reports make no span. */
function linkedToApplies(name: string, region: string, applies: ApplyReport[], store: () => Promise<unknown>): Promise<unknown> {
  const links = applies.map((a) => a.traceparent).filter((tp): tp is string => !!tp);
  if (links.length === 0) return store();
  return withSpan(name, { attributes: { region, 'report.applies': applies.length }, links }, store);
}

function standingFailures(applies: ApplyReport[]): Extract<ApplyReport, { outcome: 'failed' }>[] {
  const last = new Map<string, ApplyReport>();
  for (const a of applies) last.set(`${a.resource.type}/${a.resource.id}`, a);
  return [...last.values()].filter((a): a is Extract<ApplyReport, { outcome: 'failed' }> => a.outcome === 'failed');
}

// Over 80 lines: the route group of krane's two status reports; each handler is short.
export function clusterStatusRoutes(deps: ClusterStatusDeps) {
  const { sql } = deps;
  return (app: FastifyInstance) => {
    // onRequest: the token is checked before the body is read.
    app.addHook('onRequest', (deps.auth ?? new AgentAuth({ sql, configured: deps.agentTokens })).onRequest);

    app.post('/v1/cluster/deployments/status', async (req: FastifyRequest) => {
      const report = parse(DeploymentStatusReport, req.body);
      const region = report.region;
      assertAgentRegion(req, region);
      assertAppliesInRegion(report.applies, region);
      if (report.applies.some((a) => a.resource.type !== 'deployment_topology')) {
        throw validationError('deployment status reports carry only deployment_topology outcomes', [{ field: 'applies', message: 'wrong resource type' }]);
      }
      const ids = [...new Set([...report.instances.map((i) => i.deploymentId), ...report.applies.map((a) => a.resource.id), ...report.autoscalers.map((s) => s.deploymentId)])];
      const membership = await instances.deploymentRegionMembership(sql, ids, region);
      const gone = new Set<string>();
      for (const id of ids) {
        const inRegion = membership.get(id);
        if (inRegion) continue;
        // A deployment deleted, or taken out of this region: krane may still say its pods and
        // its failure are gone (deleting only this region's rows), nothing else.
        const harmless =
          report.instances.every((i) => i.deploymentId !== id || i.deleted) &&
          report.applies.every((a) => a.resource.id !== id || a.outcome === 'succeeded') &&
          report.autoscalers.every((s) => s.deploymentId !== id || s.deleted);
        if (harmless) gone.add(id);
        else throw forbidden(`deployment ${id} is not deployed in region ${region}`);
      }
      const live = report.instances.filter((i) => !gone.has(i.deploymentId));
      const upserts = live.filter((i) => !i.deleted).map(({ deleted: _d, ...i }) => ({ ...i, region }));
      // Each pod appears once per body (the reporter keeps one state per pod), so deletes and
      // upserts touch different rows and their order between them does not matter.
      const deletes = live.filter((i) => i.deleted);
      // A gone deployment's successes still clear its failure rows of this region.
      const applies = report.applies;
      let pruned: { deploymentId: string; podName: string; status: string }[] = [];
      const named = ids.filter((id) => !gone.has(id));
      await linkedToApplies('deployment.status.report', region, applies, () =>
        withTx(sql, async (tx) => {
          // The routes address each backend's running pods (store/desired-state.ts): whose set
          // this report moves gets a routes change, read before and after its writes. The tables
          // are held first, so a traffic write racing the report commits wholly before or after
          // it (routes.holdRoutesOf); a complete set may prune pods of any deployment here.
          await routes.holdRoutesOf(tx, report.instanceSet ? [...new Set([...named, ...(await instances.deploymentsIn(tx, region))])] : named);
          const before = await instances.runningPods(tx, region, named);
          if (report.instanceSet) {
            // The body's own reports are newer than its set: they decide their pods' rows.
            const keep = [...report.instanceSet, ...report.instances.map(({ deploymentId, podName }) => ({ deploymentId, podName }))];
            pruned = await instances.deleteInstancesNotIn(tx, region, keep, INSTANCE_SET_MIN_AGE_MS);
          }
          await instances.deleteInstances(tx, region, deletes);
          await instances.upsertInstances(tx, upserts);
          await applyFailures.recordApplyOutcomes(tx, region, outcomes(applies));
          const scalers = report.autoscalers.filter((s) => !gone.has(s.deploymentId));
          await autoscalers.deleteAutoscalers(tx, region, scalers.filter((s) => s.deleted).map((s) => s.deploymentId));
          await autoscalers.upsertAutoscalers(tx, scalers.filter((s) => !s.deleted).map(({ deleted: _d, ...s }) => ({ ...s, region })));
          const after = await instances.runningPods(tx, region, named);
          const same = (a: string[] | undefined, b: string[] | undefined) => (a ?? []).join('\n') === (b ?? []).join('\n');
          const moved = new Set([...named.filter((id) => !same(before.get(id), after.get(id))), ...pruned.filter((p) => p.status === 'running').map((p) => p.deploymentId)]);
          await routes.backendsMoved(tx, region, [...moved]);
        }),
      );
      // A gone deployment's id is unchecked agent text: its length and hash stand for it.
      for (const a of applies) {
        if (a.outcome !== 'succeeded' || !a.recreated) continue;
        const which = gone.has(a.resource.id) ? agentTextFields('deploymentId', a.resource.id) : { deploymentId: a.resource.id };
        req.log.warn({ region, ...which, ...agentTextFields('why', a.recreated) }, 'krane recreated an object for an immutable field change');
      }
      for (const f of standingFailures(applies)) req.log.warn({ deploymentId: f.resource.id, region, code: f.code, ...agentTextFields('reason', f.reason) }, 'krane could not apply deployment');
      // Pod names are the agent's text (reported earlier): the deployments they belonged to stand for them.
      if (pruned.length) req.log.warn({ region, deployments: [...new Set(pruned.map((p) => p.deploymentId))].slice(0, 20), count: pruned.length }, 'removed instance rows of pods krane no longer lists');
      const woken = new Set([...ids.filter((id) => !gone.has(id)), ...pruned.map((p) => p.deploymentId)]);
      if (deps.hooks) await deps.hooks.deploymentsReported(region, [...woken]);
      return { accepted: { instances: upserts.length, deleted: deletes.length, ignored: report.instances.length - live.length, applies: applies.length, pruned: pruned.length } };
    });

    app.post('/v1/cluster/sentinels/status', async (req: FastifyRequest) => {
      const report = parse(SentinelStatusReport, req.body);
      const region = report.region;
      assertAgentRegion(req, region);
      assertAppliesInRegion(report.applies, region);
      if (report.applies.some((a) => a.resource.type === 'deployment_topology')) {
        throw validationError('sentinel status reports carry no deployment_topology outcomes', [{ field: 'applies', message: 'wrong resource type' }]);
      }
      const sentinelApplies = report.applies.filter((a) => a.resource.type === 'sentinel');
      const ids = [...new Set([...report.sentinels.map((s) => s.sentinelId), ...sentinelApplies.map((a) => a.resource.id)])];
      const regions = await sentinels.sentinelRegions(sql, ids);
      for (const id of ids) if (regions.get(id) !== region) throw forbidden(`sentinel ${id} is not in region ${region}`);
      for (const a of report.applies.filter((x) => x.resource.type === 'cilium_network_policy')) {
        const p = await cilium.getCiliumPolicy(sql, a.resource.id);
        if (p?.region !== region) throw forbidden(`cilium network policy ${a.resource.id} is not in region ${region}`);
      }
      // A routing table is checked against the regions it is sent to. One taken out of this
      // region (its ConfigMap deleted there) may still report success, which clears its rows.
      const tables = report.applies.filter((a) => a.resource.type === 'environment_routes');
      const sent = await routes.routesInRegion(sql, [...new Set(tables.map((a) => a.resource.id))], region);
      for (const a of tables) if (a.outcome === 'failed' && !sent.has(a.resource.id)) throw forbidden(`routing table of environment ${a.resource.id} is not sent to region ${region}`);
      const failed = standingFailures(report.applies);
      await linkedToApplies('sentinel.status.report', region, report.applies, () => withTx(sql, async (tx) => {
        const now = Date.now();
        for (const s of report.sentinels) await sentinels.updateSentinelObserved(tx, s.sentinelId, region, observedOf(s, now));
        await applyFailures.recordApplyOutcomes(tx, region, outcomes(report.applies));
        for (const f of failed) if (f.resource.type === 'sentinel') await sentinels.markSentinelApplyFailed(tx, f.resource.id, region);
      }));
      for (const f of failed) req.log.error({ resource: f.resource, code: f.code, ...agentTextFields('reason', f.reason) }, 'krane could not apply sentinel resource');
      if (deps.hooks) await deps.hooks.sentinelsReported(region, ids);
      return { accepted: { sentinels: report.sentinels.length, applies: report.applies.length } };
    });

    app.post('/v1/cluster/region/status', async (req: FastifyRequest) => {
      const report = parse(RegionStatusReport, req.body);
      assertAgentRegion(req, report.region);
      const { gc } = report;
      await applyFailures.recordGcStatus(sql, { region: report.region, held: gc.held, wouldDelete: gc.wouldDelete, managed: gc.managed, maxFraction: gc.maxFraction, reportedAt: new Date(gc.at) });
      if (gc.held) req.log.error({ region: report.region, wouldDelete: gc.wouldDelete, managed: gc.managed }, 'krane gc held: waiting for an operator to confirm');
      return { accepted: { gc: 1 } };
    });
  };
}
